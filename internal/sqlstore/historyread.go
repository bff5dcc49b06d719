package sqlstore

import (
	"context"
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
// connection when it is idle (no write holds the gate, no group of run writes
// is pending), the reader pool otherwise; release must be called once the
// rows are closed.
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
//
// rctx is the context to read with: on SQLite, ctx without its cancellation
// (see historyCtx); otherwise ctx.
func (s *Store) historyReader(ctx context.Context) (rctx context.Context, pool *sql.DB, release func(), err error) {
	if s.gate == nil || s.r == s.w || s.readOnly || !s.gate.tryEnter() {
		rctx, err = s.historyCtx(ctx, s.r)
		return rctx, s.r, func() {}, err
	}
	if s.group.busy() || s.w.Stats().InUse > 0 {
		s.gate.leave()
		rctx, err = s.historyCtx(ctx, s.r)
		return rctx, s.r, func() {}, err
	}
	if err := ctx.Err(); err != nil {
		s.gate.leave()
		return nil, nil, nil, err
	}
	return context.WithoutCancel(ctx), s.w, s.gate.leave, nil
}

// historyCtx is the context of a history read on pool. On SQLite (a store
// with a write gate) a context that can be cancelled costs two goroutines per
// statement, database/sql's watch over the rows and modernc.org/sqlite's
// interrupt watch, and the wake-ups of a second thread to run them: ~20 % of
// the CPU of a 25-turn conversation (docs/benchmarks.md, "Issue 12:
// conversation on storage (i12-sql3)"). The history read is one indexed
// statement of at most limit+1 rows on a local file, so it is read without
// the cancellation once ctx is checked, when pool has an idle connection
// (nothing to wait for); a pool that looks busy keeps ctx, so a cancelled run
// does not wait for a connection. SQLite's run writes already run without
// it once they hold the gate (Store.gated).
func (s *Store) historyCtx(ctx context.Context, pool *sql.DB) (context.Context, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if s.gate == nil || pool.Stats().Idle == 0 {
		return ctx, nil
	}
	// A context with a deadline can end; asking it for Done would start
	// db's query deadline timer (db.boundCtx) only to learn that.
	if _, ok := ctx.Deadline(); !ok && ctx.Done() == nil {
		return ctx, nil
	}
	return context.WithoutCancel(ctx), nil
}

// busy reports whether a group of run writes is pending or being committed.
func (g *groupCommit) busy() bool { return g.g.Busy() }
