package db

import (
	"context"
	"encoding/json"
	"fmt"
)

// HistoryRef is a history run as a run's context needs it: which run, as
// stored when, and its run_data (nil when HistoryQuery.Cached names it
// unchanged). It is a quarter of a Run's size; a long conversation reads
// every earlier run on every turn.
type HistoryRef struct {
	RunID     string
	UpdatedAt int64
	RunData   json.RawMessage
}

// HistoryRefReader is the optional ability of a driver to return the
// history (see RunDriver.HistoryRuns) as refs, without building full rows.
type HistoryRefReader interface {
	HistoryRefs(ctx context.Context, q HistoryQuery) ([]HistoryRef, error)
}

// HistoryRefs is HistoryRuns reduced to refs: from the driver when it has
// the ability, else taken from its rows.
func (d *DB) HistoryRefs(ctx context.Context, q HistoryQuery) ([]HistoryRef, error) {
	hr, ok := d.driver.(HistoryRefReader)
	if !ok {
		rows, err := d.HistoryRuns(ctx, q)
		if err != nil {
			return nil, err
		}
		refs := make([]HistoryRef, len(rows))
		for i := range rows {
			refs[i] = HistoryRef{RunID: rows[i].RunID, UpdatedAt: rows[i].UpdatedAt, RunData: rows[i].RunData}
		}
		return refs, nil
	}
	if q.SessionID == "" {
		return nil, fmt.Errorf("%w: session_id is required", ErrInvalidFilter)
	}
	if q.Limit <= 0 {
		return nil, fmt.Errorf("%w: limit must be positive, got %d", ErrInvalidFilter, q.Limit)
	}
	ctx, call := d.bound(ctx)
	out, err := hr.HistoryRefs(ctx, q)
	return out, call.done(err)
}
