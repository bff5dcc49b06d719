package migrate

import (
	"context"
	"fmt"
	"time"
)

// Up moves every table to target (empty means Latest), one version step at a
// time, stamping each table after each step. Tables the database lacks are
// created at 3.0.0 when target is 3.0.0. Up is resumable: after a crash at any
// point, running it again converges. Another migration of the same database
// makes Up wait up to Config.LockTimeout, then fail with ErrLocked.
func (m *Manager) Up(ctx context.Context, target string) (*Summary, error) {
	if target == "" {
		target = Latest
	}
	if versionIndex(target) < 0 {
		return nil, fmt.Errorf("%w %q (known: %v)", ErrUnknownVersion, target, Versions)
	}
	start := time.Now()
	if !m.cfg.DryRun {
		release, err := m.lock(ctx)
		if err != nil {
			return nil, err
		}
		defer release()
		if err := m.ensureBookkeeping(ctx, m.cfg.DB); err != nil {
			return nil, err
		}
	}
	sts, err := m.status(ctx, target)
	if err != nil {
		return nil, err
	}
	sum := &Summary{DryRun: m.cfg.DryRun, From: map[string]string{}, To: map[string]string{}}
	for _, st := range sts {
		sum.From[st.Table] = st.Current
		cur := st.Current
		for _, v := range st.Pending {
			step := Step{Table: st.Table, From: cur, To: v}
			var err error
			if !st.Exists {
				step.Actions, err = m.createMissing(ctx, st.Kind)
			} else {
				step.Actions, err = m.upStep(ctx, st, v, sum)
			}
			if err != nil {
				return sum, fmt.Errorf("migrate: %s %s → %s: %w", st.Table, cur, v, err)
			}
			if !m.cfg.DryRun {
				if err := m.stamp(ctx, m.cfg.DB, st.Table, v); err != nil {
					return sum, err
				}
			}
			m.log.Info("migrate: step", "table", st.Table, "from", cur, "to", v, "dry_run", m.cfg.DryRun)
			sum.Steps = append(sum.Steps, step)
			cur = v
		}
		sum.To[st.Table] = cur
	}
	sum.Duration = time.Since(start)
	return sum, nil
}

// createMissing creates a table the database lacks, in its 3.0 layout.
func (m *Manager) createMissing(ctx context.Context, kind string) ([]string, error) {
	table := m.tables.name(kind)
	actions := []string{"create table " + table}
	if kind == KindSessions {
		actions = append(actions, "create table "+m.tables.Runs)
	}
	if m.cfg.DryRun {
		return actions, nil
	}
	if err := m.createTable(ctx, kind, table, ""); err != nil {
		return nil, err
	}
	if kind == KindSessions {
		if err := m.createTable(ctx, KindRuns, m.tables.Runs, m.qualify(table)); err != nil {
			return nil, err
		}
		if err := m.stamp(ctx, m.cfg.DB, m.tables.Runs, Latest); err != nil {
			return nil, err
		}
	}
	return actions, nil
}

// createTable runs a table's DDL, skipping indexes that exist.
func (m *Manager) createTable(ctx context.Context, kind, table, fk string) error {
	stmts := m.createTableSQL(kind, table, fk)
	if _, err := m.cfg.DB.ExecContext(ctx, stmts[0]); err != nil {
		return fmt.Errorf("create table %s: %w", table, err)
	}
	s := specs[kind]
	for _, ix := range s.indexes {
		if err := m.ensureIndex(ctx, table, ix, false); err != nil {
			return err
		}
	}
	for _, ix := range s.unique {
		if err := m.ensureIndex(ctx, table, ix, true); err != nil {
			return err
		}
	}
	return nil
}

func (m *Manager) ensureIndex(ctx context.Context, table string, cols []string, unique bool) error {
	ok, err := m.cat.indexExists(ctx, m.cfg.DB, table, indexName(table, cols, unique))
	if err != nil || ok {
		return err
	}
	if _, err := m.cfg.DB.ExecContext(ctx, m.createIndexSQL(table, cols, unique)); err != nil {
		return fmt.Errorf("create index on %s: %w", table, err)
	}
	return nil
}

// addColumn adds a column unless it exists (DDL is not transactional on
// MySQL and SQLite, so every step checks before it changes).
func (m *Manager) addColumn(ctx context.Context, table, name, def string) (bool, error) {
	cols, err := m.cat.columns(ctx, m.cfg.DB, table)
	if err != nil {
		return false, err
	}
	if _, ok := cols[name]; ok {
		return false, nil
	}
	if m.cfg.DryRun {
		return true, nil
	}
	q := fmt.Sprintf("ALTER TABLE %s ADD COLUMN %s %s", m.qualify(table), m.cfg.Dialect.quote(name), def)
	if _, err := m.cfg.DB.ExecContext(ctx, q); err != nil {
		return false, fmt.Errorf("add column %s: %w", name, err)
	}
	return true, nil
}

// upStep applies one version step to an existing table and says what it did.
func (m *Manager) upStep(ctx context.Context, st TableStatus, v string, sum *Summary) ([]string, error) {
	switch v {
	case "2.3.0":
		return m.up230(ctx, st)
	case "2.5.0":
		if st.Kind == KindSessions {
			return m.up250Sessions(ctx, st.Table)
		}
	case "3.0.0":
		return m.up300(ctx, st, sum)
	}
	return nil, nil // 2.5.6 only changes the approvals table, which Agentry does not manage
}

// up230: memories gain created_at (filled from updated_at) and feedback; on
// Postgres, JSON columns become JSONB.
func (m *Manager) up230(ctx context.Context, st TableStatus) ([]string, error) {
	var actions []string
	if st.Kind == KindMemories {
		added, err := m.addColumn(ctx, st.Table, "created_at", m.cfg.Dialect.bigintType())
		if err != nil {
			return nil, err
		}
		if added {
			actions = append(actions, "add column created_at")
			if !m.cfg.DryRun {
				q := fmt.Sprintf("UPDATE %s SET created_at = COALESCE(updated_at, ?) WHERE created_at IS NULL", m.qualify(st.Table))
				if _, err := m.cfg.DB.ExecContext(ctx, m.q(q), time.Now().Unix()); err != nil {
					return nil, err
				}
				if err := m.ensureIndex(ctx, st.Table, []string{"created_at"}, false); err != nil {
					return nil, err
				}
			}
		}
		if added, err = m.addColumn(ctx, st.Table, "feedback", m.cfg.Dialect.textType()); err != nil {
			return nil, err
		} else if added {
			actions = append(actions, "add column feedback")
		}
	}
	if m.cfg.Dialect == Postgres {
		cols, err := m.cat.columns(ctx, m.cfg.DB, st.Table)
		if err != nil {
			return nil, err
		}
		for _, c := range specs[st.Kind].cols {
			if cols[c.name] != "json" {
				continue
			}
			actions = append(actions, "convert "+c.name+" to JSONB")
			if m.cfg.DryRun {
				continue
			}
			q := fmt.Sprintf("ALTER TABLE %s ALTER COLUMN %s TYPE JSONB USING %s::jsonb", m.qualify(st.Table), m.cfg.Dialect.quote(c.name), m.cfg.Dialect.quote(c.name))
			if _, err := m.cfg.DB.ExecContext(ctx, q); err != nil {
				return nil, err
			}
		}
		if st.Kind == KindSessions && cols["runs"] == "json" {
			actions = append(actions, "convert runs to JSONB")
			if !m.cfg.DryRun {
				q := fmt.Sprintf("ALTER TABLE %s ALTER COLUMN runs TYPE JSONB USING runs::jsonb", m.qualify(st.Table))
				if _, err := m.cfg.DB.ExecContext(ctx, q); err != nil {
					return nil, err
				}
			}
		}
	}
	return actions, nil
}

// up250Sessions makes session_id the primary key where an older table only
// had a unique constraint (Postgres, MySQL; SQLite always had the key).
func (m *Manager) up250Sessions(ctx context.Context, table string) ([]string, error) {
	if m.cfg.Dialect == SQLite {
		return nil, nil
	}
	var n int
	q := "SELECT count(*) FROM information_schema.table_constraints WHERE table_schema = " +
		map[Dialect]string{Postgres: "$1", MySQL: "DATABASE()"}[m.cfg.Dialect] + " AND table_name = " +
		map[Dialect]string{Postgres: "$2", MySQL: "?"}[m.cfg.Dialect] + " AND constraint_type = 'PRIMARY KEY'"
	args := []any{table}
	if m.cfg.Dialect == Postgres {
		args = []any{m.cfg.Schema, table}
	}
	if err := m.cfg.DB.QueryRowContext(ctx, q, args...).Scan(&n); err != nil {
		return nil, err
	}
	if n > 0 {
		return nil, nil
	}
	if m.cfg.DryRun {
		return []string{"add primary key (session_id)"}, nil
	}
	if _, err := m.cfg.DB.ExecContext(ctx, fmt.Sprintf("ALTER TABLE %s ADD PRIMARY KEY (session_id)", m.qualify(table))); err != nil {
		return nil, fmt.Errorf("add primary key on session_id (remove NULL or duplicate session ids first): %w", err)
	}
	return []string{"add primary key (session_id)"}, nil
}

// up300: sessions copy their runs into the runs table; evals, knowledge and
// metrics gain user_id.
func (m *Manager) up300(ctx context.Context, st TableStatus, sum *Summary) ([]string, error) {
	d := m.cfg.Dialect
	switch st.Kind {
	case KindSessions:
		return m.up300Sessions(ctx, st, sum)
	case KindEvals, KindKnowledge:
		added, err := m.addColumn(ctx, st.Table, "user_id", d.strType())
		if err != nil {
			return nil, err
		}
		var actions []string
		if added {
			actions = append(actions, "add column user_id")
		}
		if !m.cfg.DryRun {
			if err := m.ensureIndex(ctx, st.Table, []string{"user_id"}, false); err != nil {
				return nil, err
			}
		}
		return append(actions, "index user_id"), nil
	case KindMetrics:
		added, err := m.addColumn(ctx, st.Table, "user_id", d.keyType()+" NOT NULL DEFAULT ''")
		if err != nil {
			return nil, err
		}
		var actions []string
		if added {
			actions = append(actions, "add column user_id NOT NULL DEFAULT ''")
		}
		if !m.cfg.DryRun {
			if err := m.ensureIndex(ctx, st.Table, []string{"user_id"}, false); err != nil {
				return nil, err
			}
			if err := m.ensureIndex(ctx, st.Table, []string{"user_id", "date", "aggregation_period"}, true); err != nil {
				return nil, err
			}
		}
		return append(actions, "index user_id", "unique (user_id, date, aggregation_period)"), nil
	}
	return nil, nil
}

func (m *Manager) up300Sessions(ctx context.Context, st TableStatus, sum *Summary) ([]string, error) {
	actions := []string{"create table " + m.tables.Runs}
	if !m.cfg.DryRun {
		if err := m.createTable(ctx, KindRuns, m.tables.Runs, m.qualify(st.Table)); err != nil {
			return nil, err
		}
	}
	if st.LegacyRunsColumn {
		actions = append(actions, "copy runs into "+m.tables.Runs+" (legacy column kept)")
		if err := m.copyRuns(ctx, sum); err != nil {
			return nil, err
		}
	}
	if m.cfg.DryRun {
		return actions, nil
	}
	if err := m.stamp(ctx, m.cfg.DB, m.tables.Runs, Latest); err != nil {
		return nil, err
	}
	if err := m.clearCheckpoint(ctx, m.cfg.DB); err != nil {
		return nil, err
	}
	return actions, nil
}
