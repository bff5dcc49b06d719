package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/agentryhq/agentry/db"
)

var _ db.SessionHistoryReader = (*Store)(nil)

const (
	nSessionCols = 14 // columns of sessionCols
	nRunCols     = 13 // columns of runCols
)

// SessionHistory reads a session and its history runs (see HistoryRuns) in
// one statement: a UNION ALL of the session row and the history query, each
// arm padded with NULLs to the other's columns and led by its kind (0: the
// session, 1: a run). Only a tie on run_index costs a second statement
// (historyWithTies).
func (s *Store) SessionHistory(ctx context.Context, hq db.HistoryQuery) (*db.Session, []db.Run, error) {
	sw, w, open, mid, end := s.sessionHistoryFrame(ctx, hq)
	cols, colArgs := s.historyCols(hq.Cached)
	sws, ws, from := sw.String(), w.String(), s.runsOnSessionIndex()
	var b strings.Builder // one allocation: the statement is built per turn
	b.Grow(len(sessionCols) + len(cols) + len(s.sessions) + len(from) + len(sws) + len(ws) + 8*(nRunCols+nSessionCols) + 128)
	for _, part := range []string{open, "SELECT 0, ", sessionCols, ", ", nulls(nRunCols), " FROM ", s.sessions, sws, mid,
		"SELECT 1, ", nulls(nSessionCols), ", ", cols, " FROM ", from, ws, " ORDER BY run_index DESC", historyLimit(hq.Limit + 1), end} {
		b.WriteString(part)
	}
	q := b.String()
	args := make([]any, 0, len(sw.args)+len(colArgs)+len(w.args)+1)
	args = append(append(append(args, sw.args...), colArgs...), w.args...)
	rctx, pool, release, err := s.historyReader(ctx)
	if err != nil {
		return nil, nil, s.fail("session history "+hq.SessionID, err)
	}
	rows, err := s.query(rctx, pool, q, args...)
	if err != nil {
		release()
		return nil, nil, s.fail("session history "+hq.SessionID, err)
	}
	sess, sessErr, runs, runsErr, err := s.scanSessionHistory(rows, len(hq.Cached) > 0)
	release()
	if err != nil {
		return nil, nil, s.fail("session history "+hq.SessionID, err)
	}
	if sessErr != nil { // as GetSession: a session that does not decode fails the read
		return nil, nil, s.fail("session history "+hq.SessionID, sessErr)
	}
	if sess == nil {
		return nil, nil, fmt.Errorf("%w: session %s", db.ErrNotFound, hq.SessionID)
	}
	runs, err = s.historyResult(ctx, w, hq.Limit, runs, runsErr)
	return sess, runs, err
}

// scanSessionHistory reads and closes SessionHistory's rows. A corrupt
// session row is reported in sessErr, a *db.CorruptRowError; corrupt runs
// are left out and reported in runsErr (joined), as scanRuns does.
func (s *Store) scanSessionHistory(rows *sql.Rows, omitted bool) (sess *db.Session, sessErr error, runs []db.Run, runsErr, err error) {
	defer rows.Close()
	cells := make([]cell, 1+nSessionCols+nRunCols)
	dest := make([]any, len(cells))
	for i := range cells {
		dest[i] = &cells[i]
	}
	runs = []db.Run{}
	var corrupt []error
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			return nil, nil, nil, nil, err
		}
		var kind int64
		if err := (cellScanner{cells[:1]}).Scan(&kind); err != nil {
			return nil, nil, nil, nil, err
		}
		var ce *db.CorruptRowError
		if kind == 0 {
			out, err := scanSession(cellScanner{cells[1 : 1+nSessionCols]})
			if err != nil && !errors.As(err, &ce) {
				return nil, nil, nil, nil, err
			}
			sess, sessErr = out, err
			continue
		}
		var data []byte
		r, err := scanRunInto(cellScanner{cells[1+nSessionCols:]}, &data, omitted)
		switch {
		case errors.As(err, &ce):
			corrupt = append(corrupt, err)
		case err != nil:
			return nil, nil, nil, nil, err
		default:
			runs = append(runs, *r)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, nil, nil, nil, err
	}
	return sess, sessErr, runs, errors.Join(corrupt...), nil
}

// nulls is n comma-separated NULLs.
func nulls(n int) string {
	switch n {
	case nRunCols:
		return runNulls
	case nSessionCols:
		return sessionNulls
	}
	return strings.TrimSuffix(strings.Repeat("NULL, ", n), ", ")
}

var (
	runNulls     = strings.TrimSuffix(strings.Repeat("NULL, ", nRunCols), ", ")
	sessionNulls = strings.TrimSuffix(strings.Repeat("NULL, ", nSessionCols), ", ")
)

// cell holds one column's driver value until the row's kind says which
// columns it belongs to. A []byte is the driver's and valid until the next
// row; the scans below copy what they keep (decodeJSON clones).
type cell struct{ v any }

func (c *cell) Scan(src any) error {
	c.v = src
	return nil
}

// cellScanner scans cells into the destination types the row scanners use.
type cellScanner struct{ cells []cell }

func (cs cellScanner) Scan(dest ...any) error {
	if len(dest) != len(cs.cells) {
		return fmt.Errorf("sqlstore: scan %d columns into %d destinations", len(cs.cells), len(dest))
	}
	for i, d := range dest {
		if err := assignCell(d, cs.cells[i].v); err != nil {
			return fmt.Errorf("sqlstore: column %d: %w", i, err)
		}
	}
	return nil
}

func assignCell(dest, src any) error {
	switch d := dest.(type) {
	case sql.Scanner:
		return d.Scan(src)
	case *string:
		switch v := src.(type) {
		case string:
			*d = v
		case []byte:
			*d = string(v)
		default:
			return fmt.Errorf("cannot scan %T into a string", src)
		}
	case *int64:
		v, ok := src.(int64)
		if !ok {
			return fmt.Errorf("cannot scan %T into an int64", src)
		}
		*d = v
	case *[]byte:
		switch v := src.(type) {
		case nil:
			*d = nil
		case []byte:
			*d = v
		case string:
			*d = []byte(v)
		default:
			return fmt.Errorf("cannot scan %T into bytes", src)
		}
	default:
		return fmt.Errorf("unsupported destination %T", dest)
	}
	return nil
}

// sessionHistoryFrame is what SessionHistory and SessionHistoryRefs build
// their UNION ALL of a session row and its history runs from: the session
// arm's and the runs arm's conditions, and how the dialect opens, joins and
// closes the two arms. SQLite takes no parenthesised UNION member, so the
// runs arm is a derived table there. Postgres types a derived table's NULLs
// as text (no match for jsonb) and MariaDB refuses its repeated NULL column
// names; parenthesised members let both type the NULLs from the other arm.
func (s *Store) sessionHistoryFrame(ctx context.Context, hq db.HistoryQuery) (sw, w *where, open, mid, end string) {
	sw = &where{}
	sw.add("session_id = ?", hq.SessionID)
	if u, ok := db.UserScope(ctx); ok {
		sw.add(s.d.EqExact("user_id"), u)
	}
	w = s.historyWhere(ctx, hq)
	if s.d.Name == "sqlite" {
		return sw, w, "", " UNION ALL SELECT * FROM (", ") h"
	}
	return sw, w, "(", ") UNION ALL (", ")"
}
