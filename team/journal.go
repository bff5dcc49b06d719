package team

import (
	"context"
	"encoding/json"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/run"
	"github.com/google/uuid"
)

// A durable team run (agent.WithJournal) journals the leader's model and
// tool calls (a delegation is one tool step) and, through memberJournal,
// its members' own model and tool calls: a member run started by a
// journaled delegation gets a run id derived from the team run id, the
// delegation step and the task (memberRunID), and its steps are recorded
// in the team run's journal under "member:<member run id>/<step>". A team
// run resumed after a crash therefore replays a member's completed model
// and tool calls instead of repeating them, at any nesting depth, and one
// ClearJournal of the team run id clears its members' steps too.

// memberRunNamespace seeds the derived member run ids (UUID v5).
var memberRunNamespace = uuid.MustParse("8f0b6b0e-5d0a-4c52-9a43-6a1f3c8e2b7d")

// memberRunID is the run id of the member run that delegation step step
// (the tool call's idempotency key, "<team run id>/<tool call id>") starts
// for sub (the member id, or the task id of a parallel task): the same on
// every attempt of the team run.
func memberRunID(step, sub string) string {
	return uuid.NewSHA1(memberRunNamespace, []byte(step+"\x00"+sub)).String()
}

// memberJournal records member runs' steps in the root team run's journal.
type memberJournal struct {
	j     run.Journal
	root  string // the outermost durable team run's id
	fence run.Fencer
}

// journalFor is the journal a member run of the team run rc records in.
func journalFor(rc agent.RunContext) run.Journal {
	if mj, ok := rc.Journal.(*memberJournal); ok {
		return mj // a member team's members: the same root
	}
	mj := &memberJournal{j: rc.Journal, root: rc.RunID}
	mj.fence, _ = rc.Journal.(run.Fencer)
	return mj
}

func (m *memberJournal) step(s run.JournalStep) run.JournalStep {
	if s.RunID != m.root {
		s.Key = "member:" + s.RunID + "/" + s.Key
		s.RunID = m.root
	}
	return s
}

// Do implements run.Journal.
func (m *memberJournal) Do(ctx context.Context, s run.JournalStep, fn func(context.Context) (json.RawMessage, error)) (json.RawMessage, error) {
	return m.j.Do(ctx, m.step(s), fn)
}

// Fence implements run.Fencer: a member run belongs to the root run's
// attempt.
func (m *memberJournal) Fence(ctx context.Context, _ string, attempt int) error {
	if m.fence == nil {
		return nil
	}
	return m.fence.Fence(ctx, m.root, attempt)
}
