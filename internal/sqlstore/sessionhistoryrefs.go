package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
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
// SessionHistory, which handles those cases.
func (s *Store) SessionHistoryRefs(ctx context.Context, hq db.HistoryQuery) (*db.Session, []db.HistoryRef, error) {
	sw, w, open, mid, end := s.sessionHistoryFrame(ctx, hq)
	data, dataArgs := s.historyRunData(hq.Cached)
	sws, ws, from := sw.String(), w.String(), s.runsOnSessionIndex()
	var b strings.Builder
	b.Grow(len(sessionCols) + len(data) + len(s.sessions) + len(from) + len(sws) + len(ws) + 160)
	for _, part := range []string{open, "SELECT 0, ", sessionCols, " FROM ", s.sessions, sws, mid,
		"SELECT 1, run_id, NULL, NULL, NULL, NULL, NULL, ", data, ", NULL, NULL, NULL, NULL, NULL, run_index, updated_at FROM ",
		from, ws, " ORDER BY run_index DESC", historyLimit(hq.Limit + 1), end} {
		b.WriteString(part)
	}
	args := make([]any, 0, len(sw.args)+len(dataArgs)+len(w.args))
	args = append(append(append(args, sw.args...), dataArgs...), w.args...)
	pool, release := s.historyReader()
	rows, err := s.query(ctx, pool, b.String(), args...)
	if err != nil {
		release()
		return nil, nil, s.fail("session history "+hq.SessionID, err)
	}
	sess, sessErr, refs, decided, err := s.scanSessionHistoryRefs(rows, hq.Limit, len(hq.Cached) > 0)
	release()
	switch {
	case err != nil:
		return nil, nil, s.fail("session history "+hq.SessionID, err)
	case sessErr != nil: // as GetSession: a session that does not decode fails the read
		return nil, nil, s.fail("session history "+hq.SessionID, sessErr)
	case sess == nil:
		return nil, nil, fmt.Errorf("%w: session %s", db.ErrNotFound, hq.SessionID)
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
	return sess, refs, nil
}

// scanSessionHistoryRefs reads and closes SessionHistoryRefs' rows: the
// session, and the first limit refs oldest first. decided is false when
// the runs need SessionHistory's handling: a run_index tie or NULL among
// them (see distinctRunIndexes) or a run_data that does not decode.
func (s *Store) scanSessionHistoryRefs(rows *sql.Rows, limit int, omitted bool) (sess *db.Session, sessErr error, refs []db.HistoryRef, decided bool, err error) {
	defer rows.Close()
	var (
		cells = make([]cell, 1+nSessionCols)
		dest  = make([]any, len(cells))
		prev  *int64
		n     int
	)
	for i := range cells {
		dest[i] = &cells[i]
	}
	refs = []db.HistoryRef{}
	decided = true
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			return nil, nil, nil, false, err
		}
		var kind int64
		if err := (cellScanner{cells[:1]}).Scan(&kind); err != nil {
			return nil, nil, nil, false, err
		}
		if kind == 0 {
			var ce *db.CorruptRowError
			out, err := scanSession(cellScanner{cells[1:]})
			if err != nil && !errors.As(err, &ce) {
				return nil, nil, nil, false, err
			}
			sess, sessErr = out, err
			continue
		}
		var (
			ref          db.HistoryRef
			data         []byte
			idx, updated sql.NullInt64
		)
		if err := (cellScanner{[]cell{cells[1], cells[7], cells[13], cells[14]}}).Scan(&ref.RunID, &data, &idx, &updated); err != nil {
			return nil, nil, nil, false, err
		}
		ref.UpdatedAt = updated.Int64
		// The order by run_index alone is the history's order only when
		// the runs up to the one past the limit have distinct run_index
		// values, none NULL among the first limit (distinctRunIndexes).
		switch {
		case !idx.Valid:
			if n < limit {
				decided = false
			}
		case prev != nil && *prev == idx.Int64:
			decided = false
		}
		if idx.Valid {
			v := idx.Int64
			prev = &v
		}
		n++
		if !decided {
			continue
		}
		if !(omitted && data == nil) {
			v, err := decodeJSON(data)
			if err != nil || len(v) == 0 {
				decided = false // SessionHistory reports it as a corrupt run
				continue
			}
			ref.RunData = v
		}
		if n <= limit {
			refs = append(refs, ref)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, nil, nil, false, err
	}
	for i, j := 0, len(refs)-1; i < j; i, j = i+1, j-1 {
		refs[i], refs[j] = refs[j], refs[i]
	}
	return sess, sessErr, refs, decided, nil
}
