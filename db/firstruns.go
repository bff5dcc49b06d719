package db

import (
	"cmp"
	"context"
	"errors"
	"slices"
)

// FirstRunReader is an optional Driver ability: the first run of many
// sessions in one query. A listing of sessions uses it to name the sessions
// that have no stored session_name, as AgentOS does, without reading every
// run of every session.
type FirstRunReader interface {
	// FirstRuns returns, keyed by session id, the first run of each given
	// session in scope: the lowest run_index among its runs that have no
	// parent run and whose run_type is the session's type (a team's own run,
	// not a member's; a workflow's, not a step's). Sessions without such a
	// run are absent. A run whose run_data cannot be decoded is left out and
	// reported as a *CorruptRowError joined to the error, next to the runs
	// that did decode.
	FirstRuns(ctx context.Context, sessionIDs []string) (map[string]Run, error)
}

// firstRunsProbe is how many runs of a session the fallback of FirstRuns
// reads to find a top-level one (team sessions start with member runs).
const firstRunsProbe = 16

// FirstRuns returns the first top-level run of each of the sessions (see
// FirstRunReader), keyed by session id. Drivers with FirstRunReader answer
// in one query; for others each session costs one GetRuns of at most
// firstRunsProbe runs, and a session whose first top-level run lies beyond
// that is left out.
func (d *DB) FirstRuns(ctx context.Context, sessions []Session) (map[string]Run, error) {
	if len(sessions) == 0 {
		return map[string]Run{}, nil
	}
	if fr, ok := d.driver.(FirstRunReader); ok {
		ids := make([]string, len(sessions))
		for i := range sessions {
			ids[i] = sessions[i].SessionID
		}
		ctx, call := d.bound(ctx)
		out, err := fr.FirstRuns(ctx, ids)
		return out, call.done(err)
	}
	out := make(map[string]Run, len(sessions))
	var corrupt []error
	for _, s := range sessions {
		rows, _, err := d.GetRuns(ctx, RunFilter{SessionID: s.SessionID, RunType: s.SessionType, Limit: firstRunsProbe, Page: 1})
		if err != nil && !errors.Is(err, ErrCorruptRow) {
			return nil, err
		}
		if err != nil {
			corrupt = append(corrupt, err)
		}
		rows = slices.DeleteFunc(rows, func(r Run) bool { return r.ParentRunID != "" })
		if len(rows) > 0 {
			out[s.SessionID] = slices.MinFunc(rows, runIndexOrder)
		}
	}
	return out, errors.Join(corrupt...)
}

// runIndexOrder orders runs by run_index (a missing one last), then
// created_at and run_id.
func runIndexOrder(a, b Run) int {
	switch {
	case a.RunIndex == nil && b.RunIndex != nil:
		return 1
	case a.RunIndex != nil && b.RunIndex == nil:
		return -1
	case a.RunIndex != nil && b.RunIndex != nil && *a.RunIndex != *b.RunIndex:
		return cmp.Compare(*a.RunIndex, *b.RunIndex)
	}
	return cmp.Or(cmp.Compare(a.CreatedAt, b.CreatedAt), cmp.Compare(a.RunID, b.RunID))
}
