package migrate

import "context"

// lock serialises migrations of one database across processes with the
// dialect's lock (a session advisory lock on Postgres, GET_LOCK on MySQL, an
// flock on a file next to the SQLite database), which the server or the
// kernel releases when the holder dies: a killed migration never leaves a
// stale lock.
func (m *Manager) lock(ctx context.Context) (release func(), err error) {
	return m.sd.LockMigration(ctx, m.cfg.DB, m.lockName(), m.cfg.LockTimeout)
}

func (m *Manager) lockName() string {
	return "agentry_migrate:" + m.sd.Schema + "." + m.tables.Sessions
}
