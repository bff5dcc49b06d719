package workflow

import (
	"context"
	"encoding/json"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/run"
)

// A continued workflow continues the agent step's paused run by that run's
// id, whatever id the step would be given if it ran now (the step's run id
// derives from the number of retries in the journal; a run paused by a
// version that numbered them differently is such a run): the agent refuses
// a continue naming another run id.
func TestExecutorPause_TheStepsPausedRunIsContinuedByItsOwnID(t *testing.T) {
	t.Parallel()
	d := openDB(t)
	var executed atomic.Int32
	wf := mustNew(t, Config{ID: "tidy", DB: d, Steps: []Step{{Name: "cleaner", Runner: confirmAgent(t, "cleaner", d, &executed)}}})
	ctx := context.Background()
	out, err := wf.Run(ctx, run.TextInput("in"), agent.WithSessionID("s"))
	if err != nil || out.Status != run.StatusPaused {
		t.Fatalf("%+v %v", out, err)
	}
	// Another step run id than the paused run's: the journal counts a retry.
	row, stored := storedRun(t, d, out.RunID)
	var j journal
	if err := json.Unmarshal(stored.Extra[journalKey], &j); err != nil || len(j.Executors) != 1 {
		t.Fatalf("journal %v: %d executors", err, len(j.Executors))
	}
	for path := range j.Executors {
		j.Retries = map[string]int{path: 1}
	}
	raw, err := json.Marshal(&j)
	if err != nil {
		t.Fatal(err)
	}
	stored.Extra[journalKey] = raw
	if row.RunData, err = json.Marshal(stored); err != nil {
		t.Fatal(err)
	}
	if _, err := d.UpsertRun(ctx, row); err != nil {
		t.Fatal(err)
	}
	final, err := wf.ContinueRun(ctx, out.RunID, confirmAll(stored.StepRequirements, true))
	if err != nil || final.Status != run.StatusCompleted || final.Content != "deleted it" || executed.Load() != 1 {
		t.Fatalf("continued: %s %v, %v; the tool ran %d times", final.Status, final.Content, err, executed.Load())
	}
	paused := stored.StepRequirements[0].ExecutorRunID
	if r, err := d.GetRun(ctx, paused); err != nil || r.Status != run.StatusCompleted {
		t.Fatalf("the step's paused run after the continue: %+v %v", r, err)
	}
}

// A workflow continue keeps its paused run's ids: one naming another run
// id, session, user or parent run is refused (it would go on as the paused
// run's, silently), before anything runs; the run stays PAUSED and its own
// ids are accepted.
func TestContinueRun_RefusesTheIdsOfAnotherRun(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		option string
		opt    agent.RunOption
	}{
		{"WithRunID", agent.WithRunID("another-run")},
		{"WithSessionID", agent.WithSessionID("another-session")},
		{"WithUserID", agent.WithUserID("bob")},
		{"WithParentRunID", agent.WithParentRunID("an-outer-run")},
	} {
		t.Run(tc.option, func(t *testing.T) {
			t.Parallel()
			d := openDB(t)
			var executed atomic.Int32
			wf := mustNew(t, Config{ID: "tidy", DB: d, Steps: []Step{{Name: "cleaner", Runner: confirmAgent(t, "cleaner", d, &executed)}}})
			ctx := context.Background()
			out, err := wf.Run(ctx, run.TextInput("in"), agent.WithSessionID("s"), agent.WithUserID("alice"))
			if err != nil || out.Status != run.StatusPaused {
				t.Fatalf("%+v %v", out, err)
			}
			answers := confirmAll(out.StepRequirements, true)
			_, err = wf.ContinueRun(ctx, out.RunID, answers, tc.opt)
			var ue *agent.UnsupportedOptionError
			if !errors.Is(err, agent.ErrUnsupportedOption) || !errors.As(err, &ue) || ue.Option != tc.option || ue.Runner.ID != "tidy" {
				t.Fatalf("err %v, want the refusal of %s", err, tc.option)
			}
			if row, _ := storedRun(t, d, out.RunID); row.Status != run.StatusPaused || row.UserID != "alice" || executed.Load() != 0 {
				t.Fatalf("after the refusal: %s %q; the tool ran %d times", row.Status, row.UserID, executed.Load())
			}
			final, err := wf.ContinueRun(ctx, out.RunID, answers, agent.WithRunID(out.RunID), agent.WithSessionID("s"), agent.WithUserID("alice"))
			if err != nil || final.Status != run.StatusCompleted || final.UserID != "alice" {
				t.Fatalf("continued with its own ids: %+v %v", final, err)
			}
		})
	}
}

// TestContinueRun_RefusesARunPausedInOtherSteps: a run paused by a workflow
// whose steps have changed since (a new version of a stored workflow) is
// refused with ErrStepsChanged; its journal's step ids named the old steps,
// so the new ones replayed their outputs (here: the new step 0 got old
// step 0's output and never ran) and took their answers. The same steps
// continue it.
func TestContinueRun_RefusesARunPausedInOtherSteps(t *testing.T) {
	t.Parallel()
	d := openDB(t)
	var audit atomic.Int32
	gate := fn("gate")
	gate.HumanReview = &HumanReview{RequiresConfirmation: true}
	before := []Step{fn("a"), gate, fn("b")}
	out, err := mustNew(t, Config{ID: "versioned", DB: d, Steps: before}).Run(context.Background(), run.TextInput("in"))
	if err != nil || out.Status != run.StatusPaused {
		t.Fatalf("run = %+v, %v", out, err)
	}
	answers := []run.StepRequirement{{StepID: out.StepRequirements[0].StepID, Confirmed: yes()}}
	changed := mustNew(t, Config{ID: "versioned", DB: d, Steps: []Step{counted("audit", &audit), gate, fn("b")}})
	if _, err := changed.ContinueRun(context.Background(), out.RunID, answers); !errors.Is(err, ErrStepsChanged) {
		t.Errorf("continue by changed steps: %v, want ErrStepsChanged", err)
	}
	if audit.Load() != 0 {
		t.Errorf("the changed steps ran")
	}
	done, err := mustNew(t, Config{ID: "versioned", DB: d, Steps: before}).ContinueRun(context.Background(), out.RunID, answers)
	if err != nil || done.Content != "in>a>gate>b" {
		t.Errorf("continue by the same steps = %+v, %v", done, err)
	}
}
