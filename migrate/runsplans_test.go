package migrate_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/internal/sqlstore"
	"github.com/agentryhq/agentry/migrate/migratetest"
)

// runsQuery is one statement Agno or Agentry issues against the runs table,
// written with ? placeholders; x marks a column the statement keeps off its
// indexes (Agentry's NoIndex: "+col" on SQLite, nothing on Postgres).
type runsQuery struct {
	who, name string
	sql       func(x func(string) string, json func(string) string) string
	// scans: the query has no index of its own in the tuned layout (it
	// filters on a column Agno declares no index for, or on run_type).
	scans bool
	// sqliteOnly: a statement only the SQLite store issues.
	sqliteOnly bool
	// store, when set, builds the statement as the store does on the
	// named dialect (instead of sql), so that the plan is of the query
	// the store runs today.
	store func(dialect string) string
}

const skip4 = "(?, ?, ?, ?)"

// runsQueries are the runs-table statements of Agno 3.0 (libs/agno/agno/db/
// {sqlite,postgres}/*.py at v3.0.0a3) and of Agentry (internal/sqlstore).
var runsQueries = []runsQuery{
	{who: "Agno", name: "get_run", sql: q("SELECT * FROM R WHERE run_id = ?")},
	{who: "Agno", name: "last N history runs (get_session with runs_limit)", sql: q("SELECT run_data FROM R WHERE session_id = ? AND parent_run_id IS NULL AND (status IS NULL OR status NOT IN " + skip4 + ") ORDER BY run_index DESC, created_at DESC, run_id DESC LIMIT ?")},
	{who: "Agno", name: "all runs of a session (get_session)", sql: q("SELECT run_data FROM R WHERE session_id = ? ORDER BY run_index, created_at, run_id")},
	{who: "Agno", name: "runs of many sessions (get_sessions)", sql: q("SELECT session_id, run_data FROM R WHERE session_id IN (?, ?) ORDER BY run_index, created_at")},
	{who: "Agno", name: "upsert_run run_index backfill", sql: q("SELECT coalesce(max(run_index) + 1, 0) FROM R WHERE session_id = ?")},
	{who: "Agno", name: "get_runs(session_id) count", sql: q("SELECT count(*) FROM (SELECT * FROM R WHERE session_id = ?) AS a")},
	{who: "Agno", name: "get_runs(session_id) page", sql: q("SELECT * FROM R WHERE session_id = ? ORDER BY run_index, created_at LIMIT ? OFFSET ?")},
	{who: "Agno", name: "get_runs(user_id) count", sql: q("SELECT count(*) FROM (SELECT * FROM R WHERE user_id = ?) AS a")},
	{who: "Agno", name: "get_runs(user_id) page", sql: q("SELECT * FROM R WHERE user_id = ? ORDER BY run_index, created_at LIMIT ? OFFSET ?")},
	{who: "Agno", name: "get_runs(agent_id) page", sql: q("SELECT * FROM R WHERE agent_id = ? ORDER BY run_index, created_at LIMIT ? OFFSET ?")},
	{who: "Agno", name: "get_runs(team_id) page", sql: q("SELECT * FROM R WHERE team_id = ? ORDER BY run_index, created_at LIMIT ? OFFSET ?")},
	{who: "Agno", name: "get_runs(workflow_id) page", sql: q("SELECT * FROM R WHERE workflow_id = ? ORDER BY run_index, created_at LIMIT ? OFFSET ?")},
	{who: "Agno", name: "get_runs(status) page", sql: q("SELECT * FROM R WHERE status = ? ORDER BY run_index, created_at LIMIT ? OFFSET ?")},
	{who: "Agno", name: "get_runs(agent_id, user_id, sort_by=created_at)", sql: q("SELECT * FROM R WHERE user_id = ? AND agent_id = ? ORDER BY created_at DESC LIMIT ?")},
	{who: "Agno", name: "delete_run", sql: q("DELETE FROM R WHERE run_id = ?")},
	{who: "Agno", name: "delete_runs", sql: q("DELETE FROM R WHERE run_id IN (?, ?)")},
	{who: "Agno", name: "delete_session (runs)", sql: q("DELETE FROM R WHERE session_id = ?")},
	{who: "Agno", name: "delete_sessions(user_id) (runs)", sql: q("DELETE FROM R WHERE session_id IN (?, ?) AND user_id = ?")},
	{who: "Agno", name: "metrics: model of each run of sessions", sql: func(_, j func(string) string) string {
		return "SELECT session_id, " + j("model") + " FROM R WHERE session_id IN (?, ?)"
	}},
	{who: "Agno", name: "update_run_in_session (Postgres)", sql: q("SELECT run_data, status FROM R WHERE run_id = ? AND session_id = ? AND (user_id = ? OR user_id IS NULL)")},
	{who: "both", name: "foreign key: runs of a deleted session", sql: q("SELECT 1 FROM R WHERE session_id = ?")},

	{who: "Agentry", name: "GetRun (user scope)", sql: q("SELECT * FROM R WHERE run_id = ? AND user_id = ?")},
	{who: "Agentry", name: "HistoryRuns", sql: q("SELECT * FROM R WHERE session_id = ? AND {parent_run_id} IS NULL AND ({status} IS NULL OR {status} NOT IN " + skip4 + ") AND {agent_id} = ? AND {user_id} = ? ORDER BY run_index DESC LIMIT ?")},
	{who: "Agentry", name: "HistoryRuns of a team member (its member runs too)", sql: q("SELECT * FROM R WHERE session_id = ? AND ({status} IS NULL OR {status} NOT IN " + skip4 + ") AND {agent_id} = ? AND {user_id} = ? ORDER BY run_index DESC LIMIT ?")},
	{who: "Agentry", name: "team history for members: GetRuns(session, team, run_type, completed) page keys", sql: q("SELECT run_index FROM R WHERE session_id = ? AND {team_id} = ? AND {run_type} = ? AND {status} IN (?) ORDER BY run_index DESC LIMIT ? OFFSET ?")},
	{who: "Agentry", name: "HistoryRuns with ties", sql: q("SELECT * FROM R WHERE session_id = ? AND {parent_run_id} IS NULL AND {agent_id} = ? AND run_index >= (SELECT MIN(run_index) FROM (SELECT run_index FROM R WHERE session_id = ? AND {parent_run_id} IS NULL AND {agent_id} = ? AND run_index IS NOT NULL ORDER BY run_index DESC LIMIT ?) top) UNION ALL SELECT * FROM R WHERE session_id = ? AND {parent_run_id} IS NULL AND {agent_id} = ? AND run_index IS NULL ORDER BY run_index DESC, created_at DESC, run_id DESC LIMIT ?")},
	{who: "Agentry", name: "history refs with cached runs (SQLite's one-row form)", sql: q("SELECT group_concat(e, '') FROM (SELECT ifnull(run_index, '') || ',' || ifnull(updated_at, '') || ',' || ifnull(octet_length(run_data), '') || ',' || ifnull(octet_length(run_id), '') || ':' || ifnull(run_id, '') AS e FROM R WHERE session_id = ? AND {parent_run_id} IS NULL AND ({status} IS NULL OR {status} NOT IN " + skip4 + ") AND {agent_id} = ? AND {user_id} = ? ORDER BY run_index DESC LIMIT ?)"), sqliteOnly: true},
	{who: "Agentry", name: "history run_data of uncached runs (SQLite's second statement)", sql: q("SELECT run_id, updated_at, run_data FROM R WHERE session_id = ? AND run_id IN (?, ?)")},
	{who: "Agentry", name: "GetRuns(session) count", sql: q("SELECT COUNT(*) FROM R WHERE session_id = ?")},
	{who: "Agentry", name: "GetRuns(session) index page keys", sql: q("SELECT run_index FROM R WHERE session_id = ? ORDER BY run_index ASC LIMIT ? OFFSET ?")},
	{who: "Agentry", name: "GetRuns(session) index page rows", sql: q("SELECT * FROM R WHERE session_id = ? AND run_index BETWEEN ? AND ? ORDER BY run_index ASC, created_at ASC, run_id ASC LIMIT ? OFFSET ?")},
	{who: "Agentry", name: "GetRuns(session) keyset page", sql: q("SELECT * FROM R WHERE session_id = ? AND run_index > ? ORDER BY run_index ASC, created_at ASC, run_id ASC LIMIT ?")},
	{who: "Agentry", name: "GetRuns(session, user scope, status)", sql: q("SELECT * FROM R WHERE session_id = ? AND {user_id} = ? AND {status} IN (?) ORDER BY run_index ASC, created_at ASC, run_id ASC LIMIT ?")},
	{who: "Agentry", name: "GetRuns(user)", sql: q("SELECT * FROM R WHERE user_id = ? ORDER BY run_index DESC, created_at DESC, run_id DESC LIMIT ?")},
	{who: "Agentry", name: "GetRuns(agent, user scope)", sql: q("SELECT * FROM R WHERE agent_id = ? AND user_id = ? ORDER BY created_at DESC, run_index DESC, run_id DESC LIMIT ?")},
	{who: "Agentry", name: "GetRuns(team)", sql: q("SELECT * FROM R WHERE team_id = ? ORDER BY run_index ASC, created_at ASC, run_id ASC LIMIT ?")},
	{who: "Agentry", name: "paused workflow runs (workflow.Continue)", sql: q("SELECT * FROM R WHERE workflow_id = ? AND run_type = ? AND status IN (?) ORDER BY run_index ASC, created_at ASC, run_id ASC LIMIT ? OFFSET ?")},
	{who: "Agentry", name: "queue recovery: RUNNING/PENDING runs", sql: q("SELECT * FROM R WHERE status IN (?, ?) ORDER BY run_index ASC, created_at ASC, run_id ASC LIMIT ? OFFSET ?")},
	{who: "Agentry", name: "GetRuns(run_type) (API filter)", sql: q("SELECT * FROM R WHERE run_type = ? ORDER BY run_index ASC, created_at ASC, run_id ASC LIMIT ?"), scans: true},
	{who: "Agentry", name: "GetRuns(parent_run_id) (API filter)", sql: q("SELECT * FROM R WHERE parent_run_id = ? ORDER BY run_index ASC, created_at ASC, run_id ASC LIMIT ?"), scans: true},
	{who: "Agentry", name: "FirstRuns", sql: q("SELECT r.* FROM S s JOIN R r ON r.run_id = (SELECT f.run_id FROM R f WHERE f.session_id = s.session_id AND {f.parent_run_id} IS NULL AND {f.run_type} = s.session_type ORDER BY f.run_index LIMIT 1) WHERE s.session_id IN (?, ?)")},
	{who: "Agentry", name: "RunsCreatedIn (metrics)", store: func(dialect string) string { return sqlstore.RunsCreatedInSQL(dialect, "R", 500) }},
	{who: "Agentry", name: "first run time (metrics)", sql: q("SELECT MIN(created_at) FROM R WHERE created_at >= 0")},
	{who: "Agentry", name: "next active day (metrics refresh)", sql: q("SELECT MIN(created_at) FROM R WHERE created_at >= ? AND created_at < ?")},
	{who: "Agentry", name: "UpsertRun next run_index", sql: q("SELECT COALESCE(MAX(run_index), -1) + 1 FROM R WHERE session_id = ?")},
	{who: "Agentry", name: "DeleteRun (user scope)", sql: q("DELETE FROM R WHERE run_id = ? AND user_id = ?")},
}

// q is a statement whose {col} markers are columns kept off indexes.
func q(s string) func(x, j func(string) string) string {
	return func(x, _ func(string) string) string {
		s := s
		for {
			i := strings.IndexByte(s, '{')
			if i < 0 {
				return s
			}
			k := strings.IndexByte(s[i:], '}')
			s = s[:i] + x(s[i+1:i+k]) + s[i+k+1:]
		}
	}
}

// planOf returns the plan of one statement, one line per plan row, and
// whether it reads the whole runs table.
func (f *fixtureDB) planOf(t *testing.T, c *sql.Conn, rq runsQuery) (string, bool) {
	t.Helper()
	x, j := func(c string) string { return c }, func(k string) string { return "run_data->>'" + k + "'" }
	if f.dialect == sqliteName {
		x = func(c string) string { return "+" + c }
		j = func(k string) string { return "json_extract(run_data, '$." + k + "')" }
	}
	var stmt string
	if rq.store != nil {
		stmt = rq.store(string(f.dialect))
	} else {
		stmt = rq.sql(x, j)
	}
	stmt = strings.NewReplacer(" R ", " "+f.table("agno_runs")+" ", " S ", " "+f.table("agno_sessions")+" ").Replace(stmt + " ")
	n := strings.Count(stmt, "?")
	args := make([]any, n)
	for i := range args {
		args[i] = fmt.Sprint(i + 1)
	}
	var prefix string
	if f.dialect == sqliteName {
		prefix = "EXPLAIN QUERY PLAN "
	} else {
		prefix = "EXPLAIN (COSTS OFF) "
		for i := n; i >= 1; i-- {
			stmt = strings.Replace(stmt, "?", fmt.Sprintf("$%d", n-i+1), 1)
		}
	}
	rows, err := c.QueryContext(context.Background(), prefix+stmt, args...)
	if err != nil {
		t.Fatalf("%s: %v\n%s", rq.name, err, stmt)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	var lines []string
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		lines = append(lines, fmt.Sprint(vals[len(vals)-1]))
	}
	plan := strings.Join(lines, "; ")
	scan := strings.Contains(plan, "Seq Scan on agno_runs")
	for _, l := range lines {
		l = strings.TrimSpace(strings.TrimLeft(l, "|-` "))
		if (l == "SCAN agno_runs" || l == "SCAN r" || l == "SCAN f") && !strings.Contains(l, "USING") {
			scan = true
		}
	}
	return plan, scan
}

// planConn returns a connection for EXPLAIN. SQLite's is on a new pool: an
// EXPLAIN runs no transaction, so a connection that loaded the schema before
// another changed it would explain with the old indexes. Postgres's has
// enable_seqscan off.
func (f *fixtureDB) planConn(t *testing.T) *sql.Conn {
	t.Helper()
	ctx := context.Background()
	pool := f.db
	if f.dialect == sqliteName {
		var err error
		if pool, err = sql.Open("sqlite", migratetest.SQLiteDSN(f.path)); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { pool.Close() })
	}
	c, err := pool.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if f.dialect == postgresName {
		if _, err := c.ExecContext(ctx, "SET enable_seqscan = off"); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

// TestRunsQueryPlans prints the plan of every runs-table statement of Agno
// and Agentry on Agno's declared indexes and on the tuned ones (-v, or the
// file named by AGENTRY_RUNS_PLANS), and fails when the tuned indexes leave a
// statement reading the whole table that Agno's did not. Postgres plans are
// taken with enable_seqscan off, so they show which index can serve a
// statement rather than what a tiny table makes cheapest.
func TestRunsQueryPlans(t *testing.T) {
	onEachBackend(t, []variant{variants[1], variants[3]}, func(t *testing.T, ctx context.Context, f *fixtureDB) {
		f.insert(t, migratetest.Canonical())
		m := f.manager(t)
		if _, err := m.Up(ctx, ""); err != nil {
			t.Fatal(err)
		}
		c := f.planConn(t)
		tuned := make([]string, len(runsQueries))
		tunedScan := make([]bool, len(runsQueries))
		for i, rq := range runsQueries {
			if rq.sqliteOnly && f.dialect != sqliteName {
				continue
			}
			tuned[i], tunedScan[i] = f.planOf(t, c, rq)
		}
		if _, err := m.Down(ctx, "3.0.0"); err != nil {
			t.Fatal(err)
		}
		c = f.planConn(t)
		var out strings.Builder
		fmt.Fprintf(&out, "\n### %s\n\n| who | statement | Agno's indexes | tuned indexes |\n|---|---|---|---|\n", f.dialect)
		for i, rq := range runsQueries {
			if rq.sqliteOnly && f.dialect != sqliteName {
				continue
			}
			agno, agnoScan := f.planOf(t, c, rq)
			fmt.Fprintf(&out, "| %s | %s | `%s` | `%s` |\n", rq.who, rq.name, agno, tuned[i])
			if tunedScan[i] && !agnoScan && !rq.scans {
				t.Errorf("%s: the tuned indexes read the whole table (%s); Agno's did not (%s)", rq.name, tuned[i], agno)
			}
		}
		t.Log(out.String())
		if path := os.Getenv("AGENTRY_RUNS_PLANS"); path != "" {
			fh, err := os.OpenFile(path+"."+string(f.dialect)+".md", os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
			if err != nil {
				t.Fatal(err)
			}
			fh.WriteString(out.String())
			fh.Close()
		}
	})
}
