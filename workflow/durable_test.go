package workflow

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/model/scripted"
	"github.com/agentryhq/agentry/run"
)

// A durable workflow run (agent.WithJournal) journals each step: resumed
// after a crash by a new attempt, it replays the steps that completed (no
// model call, no function side effect again) and continues from the first
// unfinished one.
func TestDurable_AResumedRunReplaysCompletedStepsAndContinues(t *testing.T) {
	t.Parallel()
	r := newRestartable(t)
	d := r.open()
	m1, m4 := &recorder{Model: scripted.Reply("one")}, &recorder{Model: scripted.Reply("four")}
	var effects, third atomic.Int32
	crash := make(chan struct{}, 1)
	steps := func(d *db.DB) []Step {
		return []Step{
			{Name: "s1", Runner: newAgent(t, "first", m1, d)},
			{Name: "s2", Func: func(_ context.Context, in *StepInput) (FuncResult, error) {
				effects.Add(1) // the side effect a replay must not repeat
				in.State.Update(func(m map[string]any) { m["s2"] = "done" })
				return FuncResult{Content: run.ContentText(in.PreviousStepContent) + ">two"}, nil
			}},
			{Name: "s3", Func: func(ctx context.Context, in *StepInput) (FuncResult, error) {
				if third.Add(1) == 1 {
					crash <- struct{}{} // the process dies here
					<-ctx.Done()
					return FuncResult{}, ctx.Err()
				}
				if run.IdempotencyKey(ctx) == "" {
					return FuncResult{}, errors.New("no idempotency key")
				}
				return FuncResult{Content: run.ContentText(in.PreviousStepContent) + ">three"}, nil
			}},
			{Name: "s4", Runner: newAgent(t, "fourth", m4, d)},
		}
	}
	jr, err := db.NewJournal(d)
	if err != nil {
		t.Fatal(err)
	}
	wf := mustNew(t, Config{ID: "durable", DB: d, Steps: steps(d)})
	ctx, kill := context.WithCancel(context.Background())
	go func() { <-crash; kill() }()
	opts := func(attempt int, j run.Journal) []agent.RunOption {
		return []agent.RunOption{agent.WithRunID("wf-1"), agent.WithSessionID("s"), agent.WithJournal(j, attempt)}
	}
	if out, _ := wf.Run(ctx, run.TextInput("go"), opts(1, jr)...); out == nil || out.Status != run.StatusCancelled {
		t.Fatalf("attempt 1 = %+v", out)
	}
	if len(m1.inputs()) != 1 || effects.Load() != 1 || len(m4.inputs()) != 0 {
		t.Fatalf("attempt 1: model 1 called %d, effects %d, model 4 called %d", len(m1.inputs()), effects.Load(), len(m4.inputs()))
	}

	// Restart: attempt 2 of the same run, with new handles.
	d.Close()
	d2 := r.open()
	jr2, err := db.NewJournal(d2)
	if err != nil {
		t.Fatal(err)
	}
	wf2 := mustNew(t, Config{ID: "durable", DB: d2, Steps: steps(d2)})
	out, err := wf2.Run(context.Background(), run.TextInput("go"), opts(2, jr2)...)
	if err != nil || out.Status != run.StatusCompleted || out.Content != "four" {
		t.Fatalf("attempt 2 = %s %v, %v", out.Status, out.Content, err)
	}
	if len(m1.inputs()) != 1 || effects.Load() != 1 || third.Load() != 2 || len(m4.inputs()) != 1 {
		t.Errorf("after resume: model 1 called %d (want 1), s2 effects %d (want 1), s3 ran %d (want 2), model 4 called %d (want 1)",
			len(m1.inputs()), effects.Load(), third.Load(), len(m4.inputs()))
	}
	if got := m4.inputs(); len(got) == 1 && got[0] != "one>two>three" {
		t.Errorf("s4 got %q: the replayed outputs must pass on", got[0])
	}
	if len(out.StepResults) != 4 || out.SessionState["s2"] != "done" {
		t.Errorf("step results %d, state %v", len(out.StepResults), out.SessionState)
	}
	// The step runs have deterministic ids: one row each, not two.
	rows := runsOf(t, d2, "s")
	if len(rows) != 3 {
		t.Errorf("%d rows, want the workflow run and 2 agent runs", len(rows))
	}
	// The step runs' journals are cleared once the workflow run ended.
	for _, row := range rows {
		if row.RunType == run.TypeWorkflow {
			continue
		}
		if steps, err := jr2.Steps(context.Background(), row.RunID); err != nil || len(steps) != 0 {
			t.Errorf("journal of step run %s: %d steps, %v", row.RunID, len(steps), err)
		}
	}

	// The superseded attempt 1 can neither start again nor save.
	if out, err := wf2.Run(context.Background(), run.TextInput("go"), opts(1, jr2)...); !errors.Is(err, run.ErrFenced) {
		t.Errorf("attempt 1 after attempt 2: %+v, %v", out, err)
	}
	if row, _ := storedRun(t, d2, "wf-1"); row.Status != run.StatusCompleted {
		t.Errorf("stored status %s after the fenced attempt", row.Status)
	}
}
