package sqlstore

import (
	"context"
	"database/sql"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/run"
)

var _ db.RunStatusReader = (*Store)(nil)

// RunStatuses reads the status column of runIDs in scope, 500 ids a
// statement, never run_data (see db.RunStatusReader).
func (s *Store) RunStatuses(ctx context.Context, runIDs []string) (map[string]run.Status, error) {
	out := make(map[string]run.Status, len(runIDs))
	for chunk := range chunks(runIDs, 500) {
		w := &where{}
		w.add("run_id IN ("+placeholders(len(chunk))+")", anys(chunk)...)
		s.scope(ctx, w)
		// Not prepared: the IN list's length varies.
		rows, err := s.r.QueryContext(ctx, s.d.Bind("SELECT run_id, status FROM "+s.runs+w.String()), w.args...)
		if err != nil {
			return nil, s.fail("run statuses", err)
		}
		for rows.Next() {
			var id string
			var st sql.NullString
			if err := rows.Scan(&id, &st); err != nil {
				rows.Close()
				return nil, s.fail("run statuses", err)
			}
			out[id] = run.Status(st.String)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, s.fail("run statuses", err)
		}
	}
	return out, nil
}

// RunIDsInStatus reads the ids of runs in scope whose status is one of
// statuses, in run_id order after after (a keyset page), never run_data
// (see db.RunStatusReader).
func (s *Store) RunIDsInStatus(ctx context.Context, statuses []run.Status, after string, limit int) ([]string, error) {
	w := &where{}
	w.add("status IN ("+placeholders(len(statuses))+")", anys(statuses)...)
	if after != "" {
		w.add("run_id > ?", after)
	}
	s.scope(ctx, w)
	lim, limArgs := s.limit(limit, 0)
	rows, err := s.r.QueryContext(ctx, s.d.Bind("SELECT run_id FROM "+s.runs+w.String()+" ORDER BY run_id"+lim), append(w.args, limArgs...)...)
	if err != nil {
		return nil, s.fail("run ids in status", err)
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, s.fail("run ids in status", err)
		}
		ids = append(ids, id)
	}
	return ids, s.fail("run ids in status", rows.Err())
}
