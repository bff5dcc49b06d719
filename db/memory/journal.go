package memory

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/run"
)

var _ db.StepJournalDriver = (*Driver)(nil)

// runJournal is one run's steps and its fence (the highest attempt that
// wrote).
type runJournal struct {
	attempt int
	steps   map[string]*db.RunStep
}

// fenced raises the run's fence under the write lock, or fails with
// run.ErrFenced for a superseded attempt.
func (d *Driver) fenced(runID string, attempt int) (*runJournal, error) {
	j := d.journal[runID]
	if j == nil {
		j = &runJournal{steps: map[string]*db.RunStep{}}
		d.journal[runID] = j
	}
	if j.attempt > attempt {
		return nil, fmt.Errorf("%w: run %s is at attempt %d, this is attempt %d", run.ErrFenced, runID, j.attempt, attempt)
	}
	j.attempt = attempt
	return j, nil
}

func copyStep(s *db.RunStep) *db.RunStep {
	cp := *s
	cp.Request = slices.Clone(s.Request)
	cp.Result = slices.Clone(s.Result)
	return &cp
}

// BeginStep implements db.StepJournalDriver.
func (d *Driver) BeginStep(ctx context.Context, in *db.RunStep, idempotent bool) (*db.RunStep, error) {
	unlock, err := d.write(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	j, err := d.fenced(in.RunID, in.Attempt)
	if err != nil {
		return nil, err
	}
	if old, ok := j.steps[in.StepKey]; ok {
		if old.Status == db.StepDone || !idempotent {
			return copyStep(old), nil
		}
		in = &db.RunStep{RunID: old.RunID, StepKey: old.StepKey, Kind: old.Kind, Attempt: in.Attempt, Status: db.StepStarted,
			Request: in.Request, CreatedAt: old.CreatedAt, UpdatedAt: in.UpdatedAt}
	}
	st := copyStep(in)
	st.Status, st.Result = db.StepStarted, nil
	j.steps[in.StepKey] = st
	return nil, nil
}

// GetStep implements db.StepJournalDriver.
func (d *Driver) GetStep(ctx context.Context, runID, stepKey string) (*db.RunStep, int, error) {
	unlock, err := d.read(ctx)
	if err != nil {
		return nil, 0, err
	}
	defer unlock()
	j := d.journal[runID]
	if j == nil {
		return nil, 0, nil
	}
	if st, ok := j.steps[stepKey]; ok {
		return copyStep(st), j.attempt, nil
	}
	return nil, j.attempt, nil
}

// FinishStep implements db.StepJournalDriver.
func (d *Driver) FinishStep(ctx context.Context, in *db.RunStep) error {
	unlock, err := d.write(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	j, err := d.fenced(in.RunID, in.Attempt)
	if err != nil {
		return err
	}
	st := copyStep(in)
	st.Status = db.StepDone
	if old, ok := j.steps[in.StepKey]; ok {
		st.CreatedAt, st.Kind, st.Request = old.CreatedAt, old.Kind, old.Request
	}
	j.steps[in.StepKey] = st
	return nil
}

// RunSteps implements db.StepJournalDriver.
func (d *Driver) RunSteps(ctx context.Context, runID string) ([]db.RunStep, error) {
	unlock, err := d.read(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	j := d.journal[runID]
	if j == nil {
		return nil, nil
	}
	out := make([]db.RunStep, 0, len(j.steps))
	for _, s := range j.steps {
		out = append(out, *copyStep(s))
	}
	slices.SortFunc(out, func(a, b db.RunStep) int { return strings.Compare(a.StepKey, b.StepKey) })
	return out, nil
}

// ClearRunSteps implements db.StepJournalDriver.
func (d *Driver) ClearRunSteps(ctx context.Context, runID string) error {
	unlock, err := d.write(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	delete(d.journal, runID)
	return nil
}
