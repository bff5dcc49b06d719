package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/agentryhq/agentry/db"
)

var _ db.SessionHistoryRefReader = (*Store)(nil)

// SessionHistoryRefs is SessionHistory reduced to what a turn's context
// needs: the session and, per history run, its id, updated_at and run_data.
// The runs arm selects run_id, run_data, run_index and updated_at into the
// session arm's session_id, session_data, created_at and updated_at places
// (same types on every backend), so a row is 15 columns wide instead of
// SessionHistory's 28, and a history row is four values instead of thirteen
// to convert and copy. Whenever the rows do not decide the answer alone (a
// tie or NULL run_index, a run_data that does not decode) it answers from
// SessionHistory, which handles those cases. On SQLite with cached runs the
// runs come as one row of text entries without their run_data: they are
// matched against the cache here and the runs it lacks are read by a second
// statement (buildSessionHistoryRefs, fillUncached).
func (s *Store) SessionHistoryRefs(ctx context.Context, hq db.HistoryQuery) (*db.Session, []db.HistoryRef, error) {
	var (
		v0        uint64 // the change counter before the read (historyCache)
		cacheable bool
		user      string
		scoped    bool
	)
	if s.hc != nil && hq.ReadOnlySession {
		user, scoped = db.UserScope(ctx)
		if sess, refs, ok := s.hc.lookup(hq, user, scoped); ok {
			return sess, refs, nil
		}
		v0, cacheable = s.hc.count()
	}
	q, args := s.sessionHistoryRefsQuery(ctx, hq)
	rctx, pool, release, err := s.historyReader(ctx)
	if err != nil {
		return nil, nil, s.fail("session history "+hq.SessionID, err)
	}
	sc := refsScan{limit: hq.Limit, omitted: len(hq.Cached) > 0}
	if s.matchesCachedInGo(hq.Cached) {
		sc.sized = &sizedHistory{cached: hq.Cached, keep: cacheable}
	}
	var h historyScan
	err = s.readRows(rctx, pool, q, args, func(rows Rows) (err error) {
		h, err = s.scanSessionHistoryRefs(rows, sc)
		return err
	})
	sess, sessErr, refs, decided := h.sess, h.sessErr, h.refs, h.decided
	whole := false
	if err == nil && sessErr == nil && sess != nil && decided && sc.sized != nil && len(sc.sized.need) > 0 {
		if len(sc.sized.need) > maxUncachedByID {
			whole = true // most of the history is not cached: one statement reads it all
		} else {
			whole, err = s.fillUncached(rctx, pool, hq.SessionID, refs, sc.sized.need)
		}
	}
	release()
	switch {
	case err != nil:
		return nil, nil, s.fail("session history "+hq.SessionID, err)
	case sessErr != nil: // as GetSession: a session that does not decode fails the read
		return nil, nil, s.fail("session history "+hq.SessionID, sessErr)
	case sess == nil:
		return nil, nil, fmt.Errorf("%w: session %s", db.ErrNotFound, hq.SessionID)
	case whole:
		// A run changed or went between the two statements: read the
		// history again with every run_data, as one statement.
		hq.Cached = nil
		return s.SessionHistoryRefs(ctx, hq)
	case !decided:
		sess, runs, err := s.SessionHistory(ctx, hq)
		if err != nil {
			return nil, nil, err
		}
		refs = make([]db.HistoryRef, len(runs))
		for i, r := range runs {
			refs[i] = db.HistoryRef{RunID: r.RunID, UpdatedAt: r.UpdatedAt, RunData: r.RunData}
		}
		return sess, refs, nil
	}
	if cacheable && sc.sized != nil && len(sc.sized.kept) == len(refs) {
		// store keeps it only if the counter is still v0 (read before the
		// statements): nothing committed during or since the read.
		s.hc.store(v0, hq, user, scoped, sess, sc.sized.kept)
	}
	return sess, refs, nil
}

// maxUncachedByID bounds the run ids fillUncached names in its statement (far
// below SQLite's limit of bound values); past it the history is read again
// in one statement with every run_data.
const maxUncachedByID = 256

// Rows is what a query's result is read through: *sql.Rows, or a driver's
// own rows (Dialect.QueryRows). Scan's destinations are sql.Scanners that
// take the driver's values as database/sql would pass them.
type Rows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
	Close() error
}

// refsScan is how scanSessionHistoryRefs reads the runs' rows.
type refsScan struct {
	limit int
	// omitted: a NULL run_data is a cached run left out.
	omitted bool
	// sized, when set, is SQLite's form with cached runs: the runs are
	// one row's text of entries (sizedRefEntry), without their run_data.
	sized *sizedHistory
}

// sizedHistory matches the rows of SessionHistoryRefs' SQLite statement
// with cached runs against the caller's cache, and records the runs whose
// run_data is to be read (not cached, or cached at another version).
type sizedHistory struct {
	cached []db.CachedRun
	next   int // where the search for the next row's id starts
	need   []uncachedRun
	// keep: collect kept, the refs as the history cache holds them (same
	// order as the refs).
	keep bool
	kept []cachedRef
}

// uncachedRun is a ref whose run_data fillUncached reads, as the history
// statement saw the run.
type uncachedRun struct {
	ref       int // its index in the refs, oldest first
	updatedAt int64
	updValid  bool // updated_at was not NULL
	size      int64
}

// cachedAs reports whether the caller holds the run as stored: the same id,
// updated_at and size (a NULL updated_at or size never matches, as in
// historyRunData's SQLite form). The cache lists its runs newest first, the
// rows come newest first, so the search starts after the last match.
func (h *sizedHistory) cachedAs(id string, updatedAt int64, updValid bool, size int64, sizeValid bool) bool {
	if !updValid || !sizeValid {
		return false
	}
	for k := range len(h.cached) {
		i := (h.next + k) % len(h.cached)
		if c := &h.cached[i]; c.RunID == id {
			h.next = i + 1
			return c.UpdatedAt == updatedAt && int64(c.Size) == size
		}
	}
	return false
}

// historyScan is what scanSessionHistoryRefs read: the session (sessErr
// when its row does not decode) and the first limit refs oldest first.
// decided is false when the runs need SessionHistory's handling: a
// run_index tie or NULL among them (see distinctRunIndexes) or a run_data
// that does not decode.
type historyScan struct {
	sess    *db.Session
	sessErr error
	refs    []db.HistoryRef
	decided bool
}

// scanSessionHistoryRefs reads and closes SessionHistoryRefs' rows.
func (s *Store) scanSessionHistoryRefs(rows Rows, sc refsScan) (historyScan, error) {
	defer rows.Close()
	var (
		sess    *db.Session
		sessErr error
		cells   = make([]cell, 1+nSessionCols)
		dest    = make([]any, len(cells))
		acc     = refsAcc{limit: sc.limit, decided: true}
	)
	for i := range cells {
		dest[i] = &cells[i]
	}
	acc.refs = make([]db.HistoryRef, 0, min(max(sc.limit, 0), 64))
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			return historyScan{}, err
		}
		// The cells are read with the conversions of assignCell and
		// sql.NullInt64, without Scan's pointers, which would move these
		// locals to the heap on every row.
		kind, _, err := cellInt64(cells[0].v)
		if err != nil {
			return historyScan{}, fmt.Errorf("sqlstore: column 0: %w", err)
		}
		if kind == 0 {
			var ce *db.CorruptRowError
			out, err := scanSession(cellScanner{cells[1:]})
			if err != nil && !errors.As(err, &ce) {
				return historyScan{}, err
			}
			sess, sessErr = out, err
			continue
		}
		if h := sc.sized; h != nil {
			// SQLite's form with cached runs: one row, every run an entry.
			switch text := cells[1].v.(type) {
			case nil: // no runs
			case string:
				acc.sizedRefs(h, text)
			case []byte:
				acc.sizedRefs(h, string(text))
			default:
				return historyScan{}, fmt.Errorf("sqlstore: column 1: cannot scan %T into a string", text)
			}
			continue
		}
		var ref db.HistoryRef
		if ref.RunID, err = cellString(cells[1].v); err != nil {
			return historyScan{}, fmt.Errorf("sqlstore: column 1: %w", err)
		}
		idx, idxValid, err := cellInt64(cells[13].v)
		if err == nil {
			ref.UpdatedAt, _, err = cellInt64(cells[14].v)
		}
		if err != nil {
			// A run_index or updated_at that is no number (another
			// writer's text on SQLite): SessionHistory reports the run as
			// corrupt and answers with the others.
			acc.decided = false
			continue
		}
		if !acc.within(idx, idxValid) {
			continue // the row past the limit is read for its run_index alone
		}
		data, err := cellBytes(cells[7].v)
		if err != nil {
			return historyScan{}, fmt.Errorf("sqlstore: column 7: %w", err)
		}
		if !(sc.omitted && data == nil) {
			v, err := decodeRunData(data)
			if err != nil {
				acc.decided = false // SessionHistory reports it as a corrupt run
				continue
			}
			ref.RunData = v
		}
		acc.refs = append(acc.refs, ref)
	}
	if err := rows.Err(); err != nil {
		return historyScan{}, err
	}
	refs := acc.refs
	for i, j := 0, len(refs)-1; i < j; i, j = i+1, j-1 {
		refs[i], refs[j] = refs[j], refs[i]
	}
	if h := sc.sized; h != nil {
		for i := range h.need {
			h.need[i].ref = len(refs) - 1 - h.need[i].ref
		}
		slices.Reverse(h.kept)
	}
	return historyScan{sess: sess, sessErr: sessErr, refs: refs, decided: acc.decided}, nil
}

// refsAcc collects the history's refs, newest first, as the rows (or
// SQLite's entries) give them.
type refsAcc struct {
	limit    int
	n        int // runs seen
	prev     int64
	havePrev bool // prev holds a run_index
	decided  bool
	refs     []db.HistoryRef
}

// within takes the next run's run_index and reports whether the run is one
// of the history's (the first limit, while decided). The order by run_index
// alone is the history's order only when the runs up to the one past the
// limit have distinct run_index values, none NULL among the first limit
// (distinctRunIndexes).
func (a *refsAcc) within(idx int64, idxValid bool) bool {
	switch {
	case !idxValid:
		if a.n < a.limit {
			a.decided = false
		}
	case a.havePrev && a.prev == idx:
		a.decided = false
	}
	if idxValid {
		a.prev, a.havePrev = idx, true
	}
	a.n++
	return a.decided && a.n <= a.limit
}

// sizedRefs adds the runs of SQLite's one-row form, matching each against
// the cache; an entry that does not parse leaves the history undecided.
//
// The entries are expected newest first, as the statement's subquery
// orders its rows: group_concat keeps the order it is fed in SQLite's
// implementation, but does not promise it, and asking for it (its ORDER BY
// argument) sorts the entries again in a temporary b-tree, ~3 µs a read.
// So the order is checked instead: entries out of it leave the history
// undecided, and SessionHistory answers.
func (a *refsAcc) sizedRefs(h *sizedHistory, text string) {
	sawNull := false
	for text != "" && a.decided {
		r, rest, ok := nextSizedRef(text)
		if !ok || r.idxValid && (sawNull || a.havePrev && r.idx > a.prev) {
			a.decided = false
			return
		}
		sawNull = sawNull || !r.idxValid
		text = rest
		if !a.within(r.idx, r.idxValid) {
			continue
		}
		ref := db.HistoryRef{RunID: r.id, UpdatedAt: r.upd}
		if h.keep {
			if r.idxValid && r.updValid && r.sizeValid {
				h.kept = append(h.kept, cachedRef{id: r.id, idx: r.idx, upd: r.upd, size: r.size})
			} else {
				h.keep, h.kept = false, nil // a NULL the cache cannot match
			}
		}
		if !h.cachedAs(r.id, r.upd, r.updValid, r.size, r.sizeValid) {
			ref.RunID = strings.Clone(r.id) // a decoded run may be kept: not a slice of the whole text
			h.need = append(h.need, uncachedRun{ref: len(a.refs), updatedAt: r.upd, updValid: r.updValid, size: r.size})
		}
		a.refs = append(a.refs, ref)
	}
}

// fillUncached reads the run_data of the refs named by need, on pool, in
// one statement by run id. whole is true when a run is gone or not as the
// history statement saw it (another writer between the two statements), or
// when its run_data does not decode: the caller then reads the history
// again in one statement, which reports a corrupt run as before.
func (s *Store) fillUncached(ctx context.Context, pool *sql.DB, sessionID string, refs []db.HistoryRef, need []uncachedRun) (whole bool, err error) {
	args := make([]any, 0, 1+len(need))
	args = append(args, sessionID)
	byID := make(map[string]uncachedRun, len(need))
	for _, u := range need {
		id := refs[u.ref].RunID
		args = append(args, id)
		byID[id] = u
	}
	q := "SELECT run_id, updated_at, run_data FROM " + s.runs + " WHERE session_id = ? AND run_id IN (" + placeholders(len(need)) + ")"
	rows, err := pool.QueryContext(ctx, s.d.Bind(q), args...)
	if err != nil {
		return false, err
	}
	defer rows.Close()
	found := 0
	for rows.Next() {
		var (
			id   string
			upd  sql.NullInt64
			data []byte
		)
		if err := rows.Scan(&id, &upd, &data); err != nil {
			return false, err
		}
		u, ok := byID[id]
		if !ok || upd.Valid != u.updValid || upd.Int64 != u.updatedAt || int64(len(data)) != u.size {
			return true, nil
		}
		v, err := decodeRunData(data)
		if err != nil {
			return true, nil // the one-statement read reports it
		}
		refs[u.ref].RunData = v
		found++
	}
	if err := rows.Err(); err != nil {
		return false, err
	}
	return found != len(need), nil
}

// cellInt64 is a cell as looseNull scans it, without allocating for the
// driver's usual int64 or NULL.
func cellInt64(v any) (n int64, valid bool, err error) {
	switch x := v.(type) {
	case nil:
		return 0, false, nil
	case int64:
		return x, true, nil
	}
	return looseInt64(v)
}

// cellString is a cell as assignCell scans it into a string.
func cellString(v any) (string, error) {
	switch x := v.(type) {
	case string:
		return x, nil
	case []byte:
		return string(x), nil
	}
	return "", fmt.Errorf("cannot scan %T into a string", v)
}

// cellBytes is a cell as assignCell scans it into a []byte (the driver's
// bytes, valid until the next row).
func cellBytes(v any) ([]byte, error) {
	switch x := v.(type) {
	case nil:
		return nil, nil
	case []byte:
		return x, nil
	case string:
		return []byte(x), nil
	}
	return nil, fmt.Errorf("cannot scan %T into bytes", v)
}
