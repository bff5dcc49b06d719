package db

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/agentryhq/agentry/run"
)

// RunStatusReader is the optional ability of a driver to read runs'
// statuses without their run_data: the durable queue's repair looks at
// the status of many runs (and lists the ids of the live ones) and needs
// nothing else of them. A row whose run_data is corrupt has a status all
// the same.
type RunStatusReader interface {
	// RunStatuses returns the status of each of runIDs in scope that
	// exists (a missing id is absent from the map).
	RunStatuses(ctx context.Context, runIDs []string) (map[string]run.Status, error)
	// RunIDsInStatus returns at most limit ids of runs in scope whose
	// status is one of statuses, in run_id order, after the id after
	// ("": from the first).
	RunIDsInStatus(ctx context.Context, statuses []run.Status, after string, limit int) ([]string, error)
}

// RunStatuses returns the status of each of runIDs that exists, without
// reading run_data where the driver has RunStatusReader; other drivers
// read each run (a row that cannot be decoded is then absent, reported as
// a *CorruptRowError joined to the error).
func (d *DB) RunStatuses(ctx context.Context, runIDs []string) (map[string]run.Status, error) {
	if len(runIDs) == 0 {
		return map[string]run.Status{}, nil
	}
	if sr, ok := d.driver.(RunStatusReader); ok {
		ctx, call := d.bound(ctx)
		out, err := sr.RunStatuses(ctx, runIDs)
		return out, call.done(err)
	}
	out := make(map[string]run.Status, len(runIDs))
	var corrupt []error
	for _, id := range runIDs {
		r, err := d.GetRun(ctx, id)
		switch {
		case errors.Is(err, ErrNotFound):
		case errors.Is(err, ErrCorruptRow):
			corrupt = append(corrupt, err)
		case err != nil:
			return nil, err
		default:
			out[id] = r.Status
		}
	}
	return out, errors.Join(corrupt...)
}

// RunIDsInStatus returns at most limit ids of runs whose status is one of
// statuses, in run_id order after after (see RunStatusReader); without the
// ability, from GetRuns pages (which read run_data).
func (d *DB) RunIDsInStatus(ctx context.Context, statuses []run.Status, after string, limit int) ([]string, error) {
	if limit <= 0 {
		return nil, fmt.Errorf("%w: limit must be positive, got %d", ErrInvalidFilter, limit)
	}
	if len(statuses) == 0 {
		return nil, fmt.Errorf("%w: at least one status is required", ErrInvalidFilter)
	}
	if sr, ok := d.driver.(RunStatusReader); ok {
		ctx, call := d.bound(ctx)
		out, err := sr.RunIDsInStatus(ctx, statuses, after, limit)
		return out, call.done(err)
	}
	var ids []string
	for page := 1; ; page++ {
		runs, _, err := d.GetRuns(ctx, RunFilter{Statuses: statuses, Limit: 500, Page: page})
		if err != nil && !errors.Is(err, ErrCorruptRow) {
			return nil, err
		}
		for _, r := range runs {
			if r.RunID > after {
				ids = append(ids, r.RunID)
			}
		}
		if len(runs) < 500 {
			break
		}
	}
	slices.Sort(ids)
	return ids[:min(len(ids), limit)], nil
}
