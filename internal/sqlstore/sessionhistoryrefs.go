package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

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
	q, args := s.sessionHistoryRefsQuery(ctx, hq)
	rctx, pool, release, err := s.historyReader(ctx)
	if err != nil {
		return nil, nil, s.fail("session history "+hq.SessionID, err)
	}
	rows, err := s.queryBound(rctx, pool, q, args...)
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
		cells    = make([]cell, 1+nSessionCols)
		dest     = make([]any, len(cells))
		prev     int64
		havePrev bool // prev holds a run_index
		n        int
	)
	for i := range cells {
		dest[i] = &cells[i]
	}
	refs = make([]db.HistoryRef, 0, min(max(limit, 0), 64))
	decided = true
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			return nil, nil, nil, false, err
		}
		// The cells are read with the conversions of assignCell and
		// sql.NullInt64, without Scan's pointers, which would move these
		// locals to the heap on every row.
		kind, _, err := cellInt64(cells[0].v)
		if err != nil {
			return nil, nil, nil, false, fmt.Errorf("sqlstore: column 0: %w", err)
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
		var ref db.HistoryRef
		if ref.RunID, err = cellString(cells[1].v); err != nil {
			return nil, nil, nil, false, fmt.Errorf("sqlstore: column 1: %w", err)
		}
		idx, idxValid, err := cellInt64(cells[13].v)
		if err != nil {
			return nil, nil, nil, false, fmt.Errorf("sqlstore: column 13: %w", err)
		}
		if ref.UpdatedAt, _, err = cellInt64(cells[14].v); err != nil {
			return nil, nil, nil, false, fmt.Errorf("sqlstore: column 14: %w", err)
		}
		// The order by run_index alone is the history's order only when
		// the runs up to the one past the limit have distinct run_index
		// values, none NULL among the first limit (distinctRunIndexes).
		switch {
		case !idxValid:
			if n < limit {
				decided = false
			}
		case havePrev && prev == idx:
			decided = false
		}
		if idxValid {
			prev, havePrev = idx, true
		}
		n++
		if !decided || n > limit {
			continue // the row past the limit is read for its run_index alone
		}
		data, err := cellBytes(cells[7].v)
		if err != nil {
			return nil, nil, nil, false, fmt.Errorf("sqlstore: column 7: %w", err)
		}
		if !(omitted && data == nil) {
			v, err := decodeJSON(data)
			if err != nil || len(v) == 0 {
				decided = false // SessionHistory reports it as a corrupt run
				continue
			}
			ref.RunData = v
		}
		refs = append(refs, ref)
	}
	if err := rows.Err(); err != nil {
		return nil, nil, nil, false, err
	}
	for i, j := 0, len(refs)-1; i < j; i, j = i+1, j-1 {
		refs[i], refs[j] = refs[j], refs[i]
	}
	return sess, sessErr, refs, decided, nil
}

// cellInt64 is a cell as sql.NullInt64 would scan it, without allocating
// for the driver's usual int64 or NULL.
func cellInt64(v any) (n int64, valid bool, err error) {
	switch x := v.(type) {
	case nil:
		return 0, false, nil
	case int64:
		return x, true, nil
	}
	var ni sql.NullInt64
	if err := ni.Scan(v); err != nil {
		return 0, false, err
	}
	return ni.Int64, ni.Valid, nil
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
