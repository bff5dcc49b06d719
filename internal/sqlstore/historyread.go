package sqlstore

import (
	"database/sql"
	"strconv"
)

// historyLimit is a history query's LIMIT clause, with the number written
// into the statement rather than bound. SQLite tracks which parameters its
// plan depends on in one bit per parameter, the 32nd and later sharing the
// last bit; a history query that names many cached runs has more than 31
// parameters, and with a bound LIMIT among them SQLite re-prepared the
// statement on every execution (sqlite3Reprepare was ~22 % of the CPU of a
// 25-turn conversation with the whole history; docs/benchmarks.md, "Issue
// 12: conversation on storage"). A history limit is a small per-agent
// number, so the statement texts stay few.
func historyLimit(n int) string {
	return " LIMIT " + strconv.Itoa(n)
}

// historyReader picks the pool of a turn's history read: SQLite's writer
// connection when it is idle (no write holds the gate, no group of run
// writes is pending), the reader pool otherwise; release must be called once
// the rows are closed.
//
// A SQLite connection in WAL mode drops its whole page cache whenever another
// connection committed since its last read, so on the reader pool every turn
// read its pages again with a pread each (and the WAL frames' lookups); the
// writer committed the previous turn itself and still holds them. Holding
// the gate keeps the store's run and session writes out for the read's
// duration (one short indexed query); a busy writer is not waited for (a
// statement that takes the connection between the check and the read is the
// only wait, one statement long).
// Other dialects, read-only and in-memory stores read on their pool.
func (s *Store) historyReader() (*sql.DB, func()) {
	if s.gate == nil || s.r == s.w || s.readOnly || !s.gate.tryEnter() {
		return s.r, func() {}
	}
	if s.group.busy() || s.w.Stats().InUse > 0 {
		s.gate.leave()
		return s.r, func() {}
	}
	return s.w, s.gate.leave
}

// busy reports whether a group of run writes is pending or being committed.
func (g *groupCommit) busy() bool { return g.g.Busy() }
