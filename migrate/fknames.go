package migrate

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"regexp"
	"strconv"

	"github.com/agentryhq/agentry/internal/sqlstore"
)

// ddlForeignKey finds the foreign keys of a CREATE TABLE statement, named
// (CONSTRAINT `name` FOREIGN KEY) or not.
var ddlForeignKey = regexp.MustCompile("(?:CONSTRAINT\\s+`([^`]+)`\\s+)?FOREIGN KEY")

// checkForeignKeyNames refuses, before Up changes anything, to create a
// table whose foreign key would take a name another table's foreign key
// holds in another case. MySQL/MariaDB compare table names exactly
// (lower_case_table_names=0) but InnoDB's foreign-key names ignore case
// across the database: the runs tables agno_runs and AGNO_RUNS both declare
// fk_{runs}_session_id, and the second CREATE TABLE failed with errno 121
// halfway through Up. Other dialects key constraint names per table or
// compare them exactly.
func (m *Manager) checkForeignKeyNames(ctx context.Context, sts []TableStatus) error {
	if m.sd.Name != "mysql" {
		return nil
	}
	var kinds []string
	for _, st := range sts {
		if !st.Exists {
			kinds = append(kinds, st.Kind)
		}
		if st.Kind == KindSessions {
			kinds = append(kinds, KindRuns)
		}
	}
	for _, kind := range kinds {
		table := m.tables.Name(kind)
		if ok, err := m.cat.tableExists(ctx, m.cfg.DB, table); err != nil || ok {
			return err
		}
		stmts, err := sqlstore.DDL(m.sd, m.tables, kind, Latest)
		if err != nil || len(stmts) == 0 {
			return err
		}
		unnamed := 0
		for _, fk := range ddlForeignKey.FindAllStringSubmatch(stmts[0], -1) {
			name := fk[1]
			if name == "" { // InnoDB names it {table}_ibfk_{n}
				unnamed++
				name = table + "_ibfk_" + strconv.Itoa(unnamed)
			}
			var holder, held string
			err := m.cfg.DB.QueryRowContext(ctx, "SELECT table_name, constraint_name FROM information_schema.referential_constraints "+
				"WHERE constraint_schema = DATABASE() AND LOWER(constraint_name) = LOWER(?) LIMIT 1", name).Scan(&holder, &held)
			if errors.Is(err, sql.ErrNoRows) {
				continue
			}
			if err != nil {
				return fmt.Errorf("migrate: look up foreign key %s: %w", name, err)
			}
			return fmt.Errorf("migrate: table %s cannot be created: its foreign key %s would collide with %s of table %s, "+
				"since InnoDB compares foreign-key names ignoring case: configure a %s table name that differs from %s by more than case",
				table, name, held, holder, kind, holder)
		}
	}
	return nil
}
