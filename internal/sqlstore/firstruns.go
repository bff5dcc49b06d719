package sqlstore

import (
	"context"
	"errors"
	"strings"

	"github.com/agentryhq/agentry/db"
)

var _ db.FirstRunReader = (*Store)(nil)

// FirstRuns returns the first top-level run of each session in scope (see
// db.FirstRunReader) in one statement per 500 sessions: for each session row
// a correlated subquery walks the session's (session_id, run_index) index to
// the first run without a parent and of the session's type, and the join
// reads that one row. noIndex keeps planners off the single-column indexes
// of the other conditions.
func (s *Store) FirstRuns(ctx context.Context, sessionIDs []string) (map[string]db.Run, error) {
	x := s.d.noIndex
	cols := "r." + strings.ReplaceAll(runCols, ", ", ", r.")
	runsF := s.runsFOnIndex
	first := "SELECT f.run_id FROM " + runsF + " WHERE f.session_id = s.session_id AND " + x("f.parent_run_id") +
		" IS NULL AND " + x("f.run_type") + " = s.session_type ORDER BY f.run_index LIMIT 1"
	out := make(map[string]db.Run, len(sessionIDs))
	var corrupt []error
	for chunk := range chunks(sessionIDs, 500) {
		w := &where{}
		w.add("s.session_id IN ("+placeholders(len(chunk))+")", anys(chunk)...)
		if u, ok := db.UserScope(ctx); ok {
			w.add(s.d.EqExact("s.user_id"), u)
		}
		q := "SELECT " + cols + " FROM " + s.sessions + " s JOIN " + s.runs + " r ON r.run_id = (" + first + ")" + w.String()
		// Not prepared: the IN list's length varies with the page.
		rows, err := s.r.QueryContext(ctx, s.d.Bind(q), w.args...)
		if err != nil {
			return nil, s.fail("first runs", err)
		}
		runs, err := s.scanRuns(rows)
		switch {
		case errors.Is(err, db.ErrCorruptRow):
			corrupt = append(corrupt, err)
		case err != nil:
			return nil, err
		}
		for _, r := range runs {
			out[r.SessionID] = r
		}
	}
	return out, errors.Join(corrupt...)
}
