package migrate

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/agentryhq/agentry/internal/sqlstore"
)

// agnoRunsIndexes are the runs table's secondary indexes as Agno 3.0
// declares them (each named indexName(table, cols)). Agno creates them only
// with the table; on a table it finds it creates none.
var agnoRunsIndexes = [][]string{{"session_id"}, {"run_type"}, {"agent_id"}, {"team_id"}, {"workflow_id"},
	{"user_id"}, {"status"}, {"created_at"}, {"session_id", "run_index"}}

// runsIndexStep is the table a runs-index change reports in its Step.
const runsIndexStep = "runs indexes"

// ddlIndexes returns the names of the indexes the storage layer's runs DDL
// creates, in order, with the statements that create them.
func (m *Manager) ddlIndexes() (names, stmts []string, err error) {
	all, err := sqlstore.DDL(m.sd, m.tables, KindRuns, Latest)
	if err != nil {
		return nil, nil, err
	}
	for _, s := range all {
		_, rest, ok := strings.Cut(s, "CREATE INDEX IF NOT EXISTS ")
		if !ok {
			continue
		}
		name, _, _ := strings.Cut(rest, " ON ")
		names = append(names, strings.Trim(name, "\"`"))
		stmts = append(stmts, s)
	}
	return names, stmts, nil
}

func (m *Manager) agnoRunsIndexNames() []string {
	out := make([]string, len(agnoRunsIndexes))
	for i, cols := range agnoRunsIndexes {
		out[i] = indexName(m.tables.Runs, cols)
	}
	return out
}

// tuneRunsIndexes moves an existing runs table to the storage layer's
// indexes (docs/runs-indexes.md): it creates the DDL's indexes first, so no
// query is ever without one, then drops Agno's that the DDL leaves out. Each
// part checks before it changes, so a rerun after a crash converges.
func (m *Manager) tuneRunsIndexes(ctx context.Context) ([]string, error) {
	want, create, err := m.ddlIndexes()
	if err != nil {
		return nil, err
	}
	return m.swapRunsIndexes(ctx, want, func(i int) error {
		_, err := m.cfg.DB.ExecContext(ctx, create[i])
		return err
	}, m.agnoRunsIndexNames())
}

// restoreRunsIndexes moves the runs table back to Agno 3.0's declared
// indexes: it creates them, then drops the storage layer's own.
func (m *Manager) restoreRunsIndexes(ctx context.Context) ([]string, error) {
	own, _, err := m.ddlIndexes()
	if err != nil {
		return nil, err
	}
	return m.swapRunsIndexes(ctx, m.agnoRunsIndexNames(), func(i int) error {
		return m.ensureIndex(ctx, m.tables.Runs, agnoRunsIndexes[i], "")
	}, own)
}

// swapRunsIndexes creates the indexes named want (create(i) makes want[i])
// that are missing, then drops those named old that want lacks.
func (m *Manager) swapRunsIndexes(ctx context.Context, want []string, create func(i int) error, old []string) ([]string, error) {
	table := m.tables.Runs
	ok, err := m.cat.tableExists(ctx, m.cfg.DB, table)
	if err != nil || !ok {
		return nil, err
	}
	// Two names the server cuts to one are one index: compare them cut.
	kept := make([]string, len(want))
	for i, name := range want {
		kept[i] = m.storedIdent(name)
	}
	var actions []string
	for i, name := range want {
		ok, err := m.cat.indexExists(ctx, m.cfg.DB, table, name)
		if err != nil {
			return nil, err
		}
		if ok {
			continue
		}
		actions = append(actions, "create index "+name)
		if m.cfg.DryRun {
			continue
		}
		if err := create(i); err != nil {
			return nil, fmt.Errorf("create index %s: %w", name, err)
		}
	}
	for _, name := range old {
		if slices.Contains(kept, m.storedIdent(name)) {
			continue
		}
		ok, err := m.cat.indexExists(ctx, m.cfg.DB, table, name)
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		actions = append(actions, "drop index "+name)
		if err := m.dropIndex(ctx, table, name); err != nil {
			return nil, fmt.Errorf("drop index %s: %w", name, err)
		}
	}
	return actions, nil
}

// storedIdent is the name the server stores for identifier name: Postgres
// cuts identifiers to 63 bytes (NAMEDATALEN-1) at a character boundary, so
// the storage layer's idx_{runs}_workflow_id_nn and Agno's
// idx_{runs}_workflow_id are one index once {runs} is 47 bytes long. Other
// dialects keep the name (MySQL refuses a longer one).
func (m *Manager) storedIdent(name string) string {
	const maxPostgres = 63
	if m.sd.Name != "postgres" || len(name) <= maxPostgres {
		return name
	}
	cut := maxPostgres
	for cut > 0 && !utf8.RuneStart(name[cut]) {
		cut--
	}
	return name[:cut]
}
