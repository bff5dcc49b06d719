package workflow

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/sqlite"
	"github.com/agentryhq/agentry/run"
)

// restartable is a SQLite file a test can close and open again, as a
// server restart would.
type restartable struct {
	t    *testing.T
	path string
}

func newRestartable(t *testing.T) *restartable {
	return &restartable{t: t, path: filepath.Join(t.TempDir(), "wf.db")}
}

func (r *restartable) open() *db.DB {
	d, err := sqlite.Open(context.Background(), sqlite.Config{Path: r.path})
	if err != nil {
		r.t.Fatal(err)
	}
	r.t.Cleanup(func() { d.Close() })
	return d
}

// counted is a function step that counts its runs and echoes what it got.
func counted(name string, n *atomic.Int32) Step {
	return Step{Name: name, Func: func(_ context.Context, in *StepInput) (FuncResult, error) {
		n.Add(1)
		c := run.ContentText(in.PreviousStepContent) + ">" + name
		if in.UserInput != nil {
			b, _ := json.Marshal(in.UserInput)
			c += string(b)
		}
		if in.RejectionFeedback != "" {
			c += "(" + in.RejectionFeedback + ")"
		}
		return FuncResult{Content: c}, nil
	}}
}

func yes() *bool { t := true; return &t }
func no() *bool  { f := false; return &f }

func answer(req run.StepRequirement, confirmed *bool) run.StepRequirement {
	req.Confirmed = confirmed
	return req
}

func storedRun(t *testing.T, d *db.DB, runID string) (*db.Run, *run.Output) {
	t.Helper()
	row, err := d.GetRun(context.Background(), runID)
	if err != nil {
		t.Fatal(err)
	}
	out, err := row.Output()
	if err != nil {
		t.Fatal(err)
	}
	return row, out
}

func TestHumanReview_ConfirmationPausesAndContinuesAfterARestart(t *testing.T) {
	t.Parallel()
	var a, b, c atomic.Int32
	steps := func() []Step {
		s := counted("b", &b)
		s.HumanReview = &HumanReview{RequiresConfirmation: true, ConfirmationMessage: "run b?"}
		return []Step{counted("a", &a), s, counted("c", &c)}
	}
	r := newRestartable(t)
	d := r.open()
	wf := mustNew(t, Config{ID: "hitl", DB: d, Steps: steps()})
	evs := collect(t, wf, "in", agent.WithSessionID("s"), agent.WithUserID("alice"))
	if got := names(evs); got != "WorkflowStarted StepStarted:a StepCompleted:a StepPaused:b WorkflowPaused" {
		t.Fatalf("events %s", got)
	}
	last := evs[len(evs)-1]
	if len(last.StepRequirements) != 1 || *last.PausedStepIndex != 1 || last.PausedStepName != "b" {
		t.Fatalf("paused event = %+v", last)
	}
	row, out := storedRun(t, d, last.RunID)
	if row.Status != run.StatusPaused || len(out.StepRequirements) != 1 || out.StepRequirements[0].ConfirmationMessage != "run b?" {
		t.Fatalf("stored %s %+v", row.Status, out.StepRequirements)
	}
	// Agno's StepRequirement keys, confirmed null until answered.
	var rd map[string]any
	_ = json.Unmarshal(row.RunData, &rd)
	req := rd["step_requirements"].([]any)[0].(map[string]any)
	for _, k := range []string{"step_id", "step_name", "step_index", "step_type", "requires_confirmation", "confirmed", "on_reject", "requires_user_input", "requires_route_selection", "requires_output_review", "is_post_execution", "retry_count", "timeout_at", "on_timeout"} {
		if _, ok := req[k]; !ok {
			t.Errorf("stored requirement lacks %s: %v", k, req)
		}
	}
	if req["confirmed"] != nil || rd["status"] != "PAUSED" || rd["paused_step_name"] != "b" || rd["pause_kind"] != "step" {
		t.Errorf("stored run = %v", rd)
	}

	// Restart: a new database handle and a new workflow value.
	d.Close()
	d2 := r.open()
	wf2 := mustNew(t, Config{ID: "hitl", DB: d2, Steps: steps()})
	ctx := db.WithUserScope(context.Background(), "alice")
	var got []string
	for ev, err := range wf2.ContinueStream(ctx, last.RunID, []run.StepRequirement{answer(out.StepRequirements[0], yes())}) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, string(ev.Event))
	}
	if s := strings.Join(got, " "); s != "WorkflowStarted StepContinued StepStarted StepCompleted StepStarted StepCompleted WorkflowCompleted" {
		t.Errorf("continued events %s", s)
	}
	row, out = storedRun(t, d2, last.RunID)
	if row.Status != run.StatusCompleted || out.Content != "in>a>b>c" || a.Load() != 1 || b.Load() != 1 || c.Load() != 1 {
		t.Errorf("stored %s %v; runs a=%d b=%d c=%d", row.Status, out.Content, a.Load(), b.Load(), c.Load())
	}
	if len(out.StepResults) != 3 || out.StepRequirements != nil || strings.Contains(string(row.RunData), journalKey) {
		t.Errorf("completed run = %s", row.RunData)
	}
	if _, err := wf2.ContinueRun(ctx, last.RunID, nil); !errors.Is(err, ErrNotPaused) {
		t.Errorf("continuing a completed run: %v", err)
	}
}

func TestHumanReview_AnotherUserCannotContinue(t *testing.T) {
	t.Parallel()
	d := openDB(t)
	s := fn("b")
	s.HumanReview = &HumanReview{RequiresConfirmation: true}
	wf := mustNew(t, Config{ID: "hitl-users", DB: d, Steps: []Step{s}})
	out, err := wf.Run(context.Background(), run.TextInput("x"), agent.WithUserID("alice"))
	if err != nil || out.Status != run.StatusPaused {
		t.Fatalf("run = %+v, %v", out, err)
	}
	ans := []run.StepRequirement{answer(out.StepRequirements[0], yes())}
	if _, err := wf.ContinueRun(db.WithUserScope(context.Background(), "bob"), out.RunID, ans); !errors.Is(err, db.ErrNotFound) {
		t.Errorf("bob continued alice's run: %v", err)
	}
	if _, err := wf.ContinueRun(db.WithUserScope(context.Background(), "alice"), out.RunID, nil); !errors.Is(err, ErrUnresolved) {
		t.Errorf("no answers: %v", err)
	}
	done, err := wf.ContinueRun(db.WithUserScope(context.Background(), "alice"), out.RunID, ans)
	if err != nil || done.Status != run.StatusCompleted {
		t.Errorf("alice continue = %+v, %v", done, err)
	}
}

func TestHumanReview_OnReject(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		onReject string
		review   Step // built from the counter
		status   run.Status
		content  string
	}{
		{onReject: OnRejectSkip, status: run.StatusCompleted, content: "in>a>c"},
		{onReject: OnRejectCancel, status: run.StatusCancelled},
	} {
		t.Run(c.onReject, func(t *testing.T) {
			t.Parallel()
			var a, b, cc atomic.Int32
			s := counted("b", &b)
			s.HumanReview = &HumanReview{RequiresConfirmation: true, OnReject: c.onReject}
			d := openDB(t)
			wf := mustNew(t, Config{ID: "rej", DB: d, Steps: []Step{counted("a", &a), s, counted("c", &cc)}})
			out, _ := wf.Run(context.Background(), run.TextInput("in"))
			done, _ := wf.ContinueRun(context.Background(), out.RunID, []run.StepRequirement{answer(out.StepRequirements[0], no())})
			if done.Status != c.status || b.Load() != 0 {
				t.Fatalf("continued = %s %v (b ran %d times)", done.Status, done.Content, b.Load())
			}
			if c.content != "" && done.Content != c.content {
				t.Errorf("content %v, want %s", done.Content, c.content)
			}
			if row, _ := storedRun(t, d, out.RunID); row.Status != c.status {
				t.Errorf("stored %s", row.Status)
			}
			if c.onReject == OnRejectCancel && cc.Load() != 0 {
				t.Error("a step ran after the cancel")
			}
		})
	}
	t.Run("retry", func(t *testing.T) {
		t.Parallel()
		var b atomic.Int32
		s := counted("b", &b)
		s.HumanReview = &HumanReview{RequiresOutputReview: true, OnReject: OnRejectRetry, MaxRetries: 2}
		wf := mustNew(t, Config{ID: "retry", DB: openDB(t), Steps: []Step{s, fn("c")}})
		out, _ := wf.Run(context.Background(), run.TextInput("in"))
		req := out.StepRequirements[0]
		if !req.RequiresOutputReview || !req.IsPostExecution || req.StepOutput == nil || req.StepOutput.Content != "in>b" {
			t.Fatalf("review requirement = %+v", req)
		}
		rej := answer(req, no())
		rej.RejectionFeedback = "shorter"
		out, err := wf.ContinueRun(context.Background(), out.RunID, []run.StepRequirement{rej})
		if err != nil || out.Status != run.StatusPaused || b.Load() != 2 {
			t.Fatalf("after the rejection: %s %v (b ran %d)", out.Status, err, b.Load())
		}
		req = out.StepRequirements[0]
		if req.StepOutput.Content != "in>b(shorter)" || req.RetryCount != 1 {
			t.Fatalf("second review = %+v %v", req, req.StepOutput.Content)
		}
		out, err = wf.ContinueRun(context.Background(), out.RunID, []run.StepRequirement{answer(req, yes())})
		if err != nil || out.Status != run.StatusCompleted || out.Content != "in>b(shorter)>c" || b.Load() != 2 {
			t.Errorf("after approval: %s %v %v", out.Status, out.Content, err)
		}
		// Rejected beyond MaxRetries, the step fails the run.
		out, _ = wf.Run(context.Background(), run.TextInput("in"))
		for range 3 {
			if out.Status != run.StatusPaused {
				break
			}
			out, _ = wf.ContinueRun(context.Background(), out.RunID, []run.StepRequirement{answer(out.StepRequirements[0], no())})
		}
		if out.Status != run.StatusError || !strings.Contains(out.ContentString(), "max_retries") {
			t.Errorf("after too many rejections: %s %v", out.Status, out.Content)
		}
	})
	t.Run("else", func(t *testing.T) {
		t.Parallel()
		var then, els atomic.Int32
		cond := Step{Name: "c", Condition: &Condition{If: "true", Steps: []Step{counted("then", &then)}, Else: []Step{counted("else", &els)}},
			HumanReview: &HumanReview{RequiresConfirmation: true, OnReject: OnRejectElse}}
		wf := mustNew(t, Config{ID: "else", DB: openDB(t), Steps: []Step{cond}})
		var last run.Event
		for ev, err := range wf.Stream(context.Background(), run.TextInput("in")) {
			if err != nil {
				t.Fatal(err)
			}
			if ev.Event == run.EventConditionPaused {
				last = ev
			}
		}
		if last.Event != run.EventConditionPaused {
			t.Fatal("no ConditionPaused event")
		}
		out, err := wf.ContinueRun(context.Background(), last.RunID, []run.StepRequirement{answer(last.StepRequirements[0], no())})
		if err != nil || out.Content != "in>else" || then.Load() != 0 || els.Load() != 1 {
			t.Errorf("continued = %v %v", out.Content, err)
		}
	})
}

func TestHumanReview_UserInputIsValidatedAgainstTheSchema(t *testing.T) {
	t.Parallel()
	var n atomic.Int32
	s := counted("b", &n)
	s.HumanReview = &HumanReview{RequiresUserInput: true, UserInputMessage: "how many?", UserInputSchema: []run.UserInputField{
		{Name: "count", FieldType: "int", Required: true},
		{Name: "tone", FieldType: "str", AllowedValues: []any{"dry", "warm"}},
	}}
	wf := mustNew(t, Config{ID: "input", DB: openDB(t), Steps: []Step{s}})
	out, _ := wf.Run(context.Background(), run.TextInput("in"))
	req := out.StepRequirements[0]
	if !req.RequiresUserInput || len(req.UserInputSchema) != 2 {
		t.Fatalf("requirement = %+v", req)
	}
	for _, bad := range []map[string]any{{}, {"count": "many"}, {"count": 2.5}, {"count": 2, "tone": "loud"}, {"count": 2, "extra": 1}} {
		r := req
		r.UserInput = bad
		if _, err := wf.ContinueRun(context.Background(), out.RunID, []run.StepRequirement{r}); !errors.Is(err, ErrInvalidUserInput) {
			t.Errorf("input %v: %v", bad, err)
		}
	}
	req.UserInput = map[string]any{"count": float64(3), "tone": "warm"}
	done, err := wf.ContinueRun(context.Background(), out.RunID, []run.StepRequirement{req})
	if err != nil || done.Content != `in>b{"count":3,"tone":"warm"}` || n.Load() != 1 {
		t.Errorf("continued = %v %v", done.Content, err)
	}
}

func TestHumanReview_OutputReviewEditsTheOutput(t *testing.T) {
	t.Parallel()
	var n atomic.Int32
	s := counted("b", &n)
	s.HumanReview = &HumanReview{RequiresOutputReview: true}
	wf := mustNew(t, Config{ID: "edit", DB: openDB(t), Steps: []Step{s, fn("c")}})
	var evs []run.Event
	for ev, err := range wf.Stream(context.Background(), run.TextInput("in")) {
		if err != nil {
			t.Fatal(err)
		}
		evs = append(evs, ev)
	}
	if got := names(evs); got != "WorkflowStarted StepStarted:b StepOutputReview:b WorkflowPaused" {
		t.Fatalf("events %s", got)
	}
	req := evs[len(evs)-1].StepRequirements[0]
	req.Confirmed, req.EditedOutput = yes(), "edited by hand"
	out, err := wf.ContinueRun(context.Background(), evs[0].RunID, []run.StepRequirement{req})
	if err != nil || out.Content != "edited by hand>c" || n.Load() != 1 {
		t.Errorf("continued = %v %v (b ran %d)", out.Content, err, n.Load())
	}
}

// TestHumanReview_PauseInsideAParallelBranch: the other branches finish,
// the run pauses, and continuing runs only the paused branch.
func TestHumanReview_PauseInsideAParallelBranch(t *testing.T) {
	t.Parallel()
	var b0, b1, b2, after atomic.Int32
	mid := counted("b1", &b1)
	mid.HumanReview = &HumanReview{RequiresConfirmation: true}
	r := newRestartable(t)
	build := func(d *db.DB) *Workflow {
		return mustNew(t, Config{ID: "par-hitl", DB: d, Steps: []Step{
			{Name: "p", Parallel: &Parallel{Steps: []Step{counted("b0", &b0), {Name: "inner", Steps: &Steps{Steps: []Step{mid}}}, counted("b2", &b2)}}},
			counted("after", &after),
		}})
	}
	d := r.open()
	out, err := build(d).Run(context.Background(), run.TextInput("in"))
	if err != nil || out.Status != run.StatusPaused || out.StepRequirements[0].StepID != "0.1.0" || b0.Load() != 1 || b2.Load() != 1 || after.Load() != 0 {
		t.Fatalf("run = %s %v %+v", out.Status, err, out.StepRequirements)
	}
	d.Close()
	d = r.open()
	done, err := build(d).ContinueRun(context.Background(), out.RunID, []run.StepRequirement{answer(out.StepRequirements[0], yes())})
	if err != nil || done.Status != run.StatusCompleted {
		t.Fatalf("continued = %+v, %v", done, err)
	}
	if b0.Load() != 1 || b1.Load() != 1 || b2.Load() != 1 || after.Load() != 1 {
		t.Errorf("runs: b0=%d b1=%d b2=%d after=%d", b0.Load(), b1.Load(), b2.Load(), after.Load())
	}
	p := done.StepResults[0]
	if len(p.Steps) != 3 || p.Steps[1].StepName != "inner" || p.Steps[1].Content != "in>b1" {
		t.Errorf("parallel result = %+v", p)
	}
}

// TestHumanReview_AStopInAParallelBranchHoldsAcrossItsSiblingsPause: a
// branch that stopped the run while another branch paused still stops it
// when the run is continued (the replayed branch stopped nothing: the step
// after the Parallel ran).
func TestHumanReview_AStopInAParallelBranchHoldsAcrossItsSiblingsPause(t *testing.T) {
	t.Parallel()
	var b1, after atomic.Int32
	stop := Step{Name: "stop", Func: func(context.Context, *StepInput) (FuncResult, error) {
		return FuncResult{Content: "enough", Stop: true}, nil
	}}
	mid := counted("b1", &b1)
	mid.HumanReview = &HumanReview{RequiresConfirmation: true}
	r := newRestartable(t)
	build := func(d *db.DB) *Workflow {
		return mustNew(t, Config{ID: "par-stop", DB: d, Steps: []Step{
			{Name: "p", Parallel: &Parallel{Steps: []Step{stop, mid}}}, counted("after", &after)}})
	}
	d := r.open()
	out, err := build(d).Run(context.Background(), run.TextInput("in"))
	if err != nil || out.Status != run.StatusPaused {
		t.Fatalf("run = %s, %v", out.Status, err)
	}
	d.Close()
	d = r.open()
	done, err := build(d).ContinueRun(context.Background(), out.RunID, []run.StepRequirement{answer(out.StepRequirements[0], yes())})
	if err != nil || done.Status != run.StatusCompleted {
		t.Fatalf("continued = %+v, %v", done, err)
	}
	if b1.Load() != 1 || after.Load() != 0 {
		t.Errorf("runs: b1=%d after=%d, want 1 and 0 (the run stopped after the Parallel)", b1.Load(), after.Load())
	}
	if len(done.StepResults) != 1 || !done.StepResults[0].Stop {
		t.Errorf("step results = %+v, want the Parallel alone, stopped", done.StepResults)
	}
}

func TestHumanReview_RouterAsksWhichRoute(t *testing.T) {
	t.Parallel()
	var a, b atomic.Int32
	wf := mustNew(t, Config{ID: "route", DB: openDB(t), Steps: []Step{{Name: "r", Router: &Router{Choices: []Step{counted("a", &a), counted("b", &b)}},
		HumanReview: &HumanReview{RequiresUserInput: true}}}})
	out, _ := wf.Run(context.Background(), run.TextInput("in"))
	req := out.StepRequirements[0]
	if !req.RequiresRouteSelection || strings.Join(req.AvailableChoices, ",") != "a,b" {
		t.Fatalf("requirement = %+v", req)
	}
	for _, bad := range [][]string{nil, {"c"}, {"a", "b"}} {
		r := req
		r.SelectedChoices = bad
		if _, err := wf.ContinueRun(context.Background(), out.RunID, []run.StepRequirement{r}); !errors.Is(err, ErrUnresolved) {
			t.Errorf("choices %v: %v", bad, err)
		}
	}
	req.SelectedChoices = []string{"b"}
	done, err := wf.ContinueRun(context.Background(), out.RunID, []run.StepRequirement{req})
	if err != nil || done.Content != "in>b" || a.Load() != 0 || b.Load() != 1 {
		t.Errorf("continued = %v %v", done.Content, err)
	}
}

func TestHumanReview_LoopIterationReview(t *testing.T) {
	t.Parallel()
	var n atomic.Int32
	wf := mustNew(t, Config{ID: "iter", DB: openDB(t), Steps: []Step{{Name: "l", Loop: &Loop{MaxIterations: 5, Steps: []Step{counted("a", &n)}},
		HumanReview: &HumanReview{RequiresIterationReview: true}}}})
	out, _ := wf.Run(context.Background(), run.TextInput("in"))
	out, _ = wf.ContinueRun(context.Background(), out.RunID, []run.StepRequirement{answer(out.StepRequirements[0], yes())})
	if out.Status != run.StatusPaused || n.Load() != 2 {
		t.Fatalf("after one more: %s, %d iterations", out.Status, n.Load())
	}
	out, err := wf.ContinueRun(context.Background(), out.RunID, []run.StepRequirement{answer(out.StepRequirements[0], no())})
	if err != nil || out.Status != run.StatusCompleted || out.Content != "in>a>a" || n.Load() != 2 {
		t.Errorf("after stop: %s %v %v, %d iterations", out.Status, out.Content, err, n.Load())
	}
}

// TestHumanReview_TimeoutAppliesWithoutACallback: nobody answers; the
// timeout applies OnTimeout in the process that paused, and after a restart
// through ResumeExpired.
func TestHumanReview_TimeoutAppliesWithoutACallback(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		onTimeout string
		restart   bool
		status    run.Status
		content   string
	}{
		{OnTimeoutApprove, false, run.StatusCompleted, "in>b>c"},
		{OnTimeoutSkip, true, run.StatusCompleted, "in>c"},
		{OnTimeoutCancel, true, run.StatusCancelled, ""},
		{OnTimeoutApprove, true, run.StatusCompleted, "in>b>c"},
	} {
		t.Run(c.onTimeout, func(t *testing.T) {
			t.Parallel()
			var b atomic.Int32
			steps := func() []Step {
				s := counted("b", &b)
				s.HumanReview = &HumanReview{RequiresConfirmation: true, Timeout: 200 * time.Millisecond, OnTimeout: c.onTimeout}
				return []Step{s, fn("c")}
			}
			r := newRestartable(t)
			d := r.open()
			wf, err := New(Config{ID: "timeout", DB: d, Steps: steps()})
			if err != nil {
				t.Fatal(err)
			}
			out, _ := wf.Run(context.Background(), run.TextInput("in"), agent.WithUserID("alice"))
			if out.Status != run.StatusPaused || out.StepRequirements[0].TimeoutAt == "" {
				t.Fatalf("run = %s %+v", out.Status, out.StepRequirements)
			}
			if c.restart {
				wf.Close() // the process ends before the timeout
				d.Close()
				d = r.open()
				wf = mustNew(t, Config{ID: "timeout", DB: d, Steps: steps()})
				// The new process starts before the timeout and after it.
				if _, err := wf.ResumeExpired(context.Background()); err != nil {
					t.Fatal(err)
				}
				time.Sleep(250 * time.Millisecond)
				if _, err := wf.ResumeExpired(context.Background()); err != nil {
					t.Fatal(err)
				}
			} else {
				t.Cleanup(wf.Close)
			}
			var row *db.Run
			for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
				if row, _ = storedRun(t, d, out.RunID); row.Status != run.StatusPaused && row.Status != run.StatusRunning {
					break
				}
			}
			_, stored := storedRun(t, d, out.RunID)
			if row.Status != c.status || (c.content != "" && stored.Content != c.content) {
				t.Errorf("stored %s %v, want %s %s", row.Status, stored.Content, c.status, c.content)
			}
		})
	}
}

// TestHumanReview_PausesAreQueuedAsApprovals: each requirement of a paused
// run is a pending approval in agno_approvals; continuing the run resolves
// it and the run's end is recorded on it.
func TestHumanReview_PausesAreQueuedAsApprovals(t *testing.T) {
	t.Parallel()
	d := openDB(t)
	a, b := fn("a"), fn("b")
	a.HumanReview = &HumanReview{RequiresConfirmation: true, ConfirmationMessage: "ok to run a?"}
	b.HumanReview = &HumanReview{RequiresOutputReview: true}
	wf := mustNew(t, Config{ID: "queued", Name: "Queued", DB: d, Steps: []Step{{Name: "p", Parallel: &Parallel{Steps: []Step{a, b}}}}})
	out, _ := wf.Run(context.Background(), run.TextInput("in"), agent.WithUserID("alice"), agent.WithSessionID("s"))
	alice := db.WithUserScope(context.Background(), "alice")
	list, n, err := d.ListApprovals(alice, db.ApprovalFilter{Status: db.ApprovalPending, Limit: 10, Page: 1})
	if err != nil || n != 2 {
		t.Fatalf("pending approvals = %d, %v", n, err)
	}
	types := map[string]db.Approval{}
	for _, ap := range list {
		types[ap.PauseType] = ap
	}
	conf := types["confirmation"]
	if conf.RunID != out.RunID || conf.SourceType != "workflow" || conf.WorkflowID != "queued" || conf.SourceName != "Queued" ||
		conf.RunStatus != "PAUSED" || !strings.Contains(string(conf.Context), "ok to run a?") || types["output_review"].ID == "" {
		t.Errorf("approvals = %+v", list)
	}
	if _, _, err := d.ListApprovals(db.WithUserScope(context.Background(), "bob"), db.ApprovalFilter{Limit: 10, Page: 1}); err != nil {
		t.Fatal(err)
	} else if l, _, _ := d.ListApprovals(db.WithUserScope(context.Background(), "bob"), db.ApprovalFilter{Limit: 10, Page: 1}); len(l) != 0 {
		t.Errorf("bob sees %d approvals", len(l))
	}
	var answers []run.StepRequirement
	for _, r := range out.StepRequirements {
		answers = append(answers, answer(r, yes()))
	}
	done, err := wf.ContinueRun(alice, out.RunID, answers)
	if err != nil || done.Status != run.StatusCompleted {
		t.Fatalf("continued = %+v, %v", done, err)
	}
	list, _, _ = d.ListApprovals(alice, db.ApprovalFilter{RunID: out.RunID, Limit: 10, Page: 1})
	for _, ap := range list {
		if ap.Status != db.ApprovalApproved || ap.ResolvedBy != "alice" || ap.RunStatus != "COMPLETED" {
			t.Errorf("after continue: %+v", ap)
		}
	}
}

// TestHumanReview_LosingContinueLeavesApprovalsPending: a continue that
// finds the run already taken by another continue in progress must not
// record its answers on the run's approvals: they would say "approved"
// while the other continue ran the run with its own answers.
func TestHumanReview_LosingContinueLeavesApprovalsPending(t *testing.T) {
	t.Parallel()
	d := openDB(t)
	a := fn("a")
	a.HumanReview = &HumanReview{RequiresConfirmation: true}
	wf := mustNew(t, Config{ID: "race", DB: d, Steps: []Step{a}})
	alice := db.WithUserScope(context.Background(), "alice")
	out, _ := wf.Run(alice, run.TextInput("in"), agent.WithUserID("alice"), agent.WithSessionID("s"))
	if out.Status != run.StatusPaused {
		t.Fatalf("run = %s", out.Status)
	}
	// Another continue holds the run (registered, the row still PAUSED).
	_, release, err := run.DefaultRegistry().Begin(context.Background(),
		run.Registration{RunID: out.RunID, Component: wf.Component(), UserID: "alice"}, func(error) {})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := wf.ContinueRun(alice, out.RunID, []run.StepRequirement{answer(out.StepRequirements[0], yes())}); err == nil {
		t.Fatal("a continue of a run another continue holds succeeded")
	}
	release()
	list, _, err := d.ListApprovals(alice, db.ApprovalFilter{RunID: out.RunID, Limit: 10, Page: 1})
	if err != nil || len(list) != 1 {
		t.Fatalf("approvals = %+v, %v", list, err)
	}
	if list[0].Status != db.ApprovalPending {
		t.Errorf("the losing continue resolved the approval: %s by %q", list[0].Status, list[0].ResolvedBy)
	}
	// The run can still be continued, and its answer is the one recorded.
	done, err := wf.ContinueRun(alice, out.RunID, []run.StepRequirement{answer(out.StepRequirements[0], no())})
	if err != nil {
		t.Fatal(err)
	}
	list, _, _ = d.ListApprovals(alice, db.ApprovalFilter{RunID: out.RunID, Limit: 10, Page: 1})
	if len(list) != 1 || list[0].Status != db.ApprovalRejected || list[0].RunStatus != string(done.Status) {
		t.Errorf("after the winning continue: %d approvals, first %s with run status %s (run %s)", len(list), list[0].Status, list[0].RunStatus, done.Status)
	}
}

// TestHumanReview_AFloatFieldTakesOnlyNumbersJSONCanHold: a float field's
// text answer is a number as a whole ("1.5abc" was 1.5) and one JSON can
// hold: "NaN" or "Inf" was taken, and the run, which could then not be
// stored when it paused again, stayed RUNNING.
func TestHumanReview_AFloatFieldTakesOnlyNumbersJSONCanHold(t *testing.T) {
	t.Parallel()
	var n, m atomic.Int32
	s := counted("b", &n)
	s.HumanReview = &HumanReview{RequiresUserInput: true, UserInputSchema: []run.UserInputField{{Name: "f", FieldType: "float"}}}
	next := counted("c", &m)
	next.HumanReview = &HumanReview{RequiresConfirmation: true}
	d := openDB(t)
	wf := mustNew(t, Config{ID: "float-input", DB: d, Steps: []Step{s, next}})
	out, _ := wf.Run(context.Background(), run.TextInput("in"))
	req := out.StepRequirements[0]
	for _, bad := range []string{"NaN", "Inf", "-infinity", "1.5abc", "1e400"} {
		r := req
		r.UserInput = map[string]any{"f": bad}
		if _, err := wf.ContinueRun(context.Background(), out.RunID, []run.StepRequirement{r}); !errors.Is(err, ErrInvalidUserInput) {
			t.Errorf("input %q: %v", bad, err)
		}
	}
	req.UserInput = map[string]any{"f": "2.5"}
	done, err := wf.ContinueRun(context.Background(), out.RunID, []run.StepRequirement{req})
	if err != nil || done.Status != run.StatusPaused || n.Load() != 1 {
		t.Fatalf("continued = %+v, %v", done, err)
	}
	if row, _ := storedRun(t, d, out.RunID); row.Status != run.StatusPaused {
		t.Errorf("stored %s, want PAUSED", row.Status)
	}
}

// TestHumanReview_AContinueOfARunContinuedSinceItWasReadIsRefused: a
// continue that read the paused run, then found it PAUSED again by another
// continue that ran meanwhile (double submit), ran the steps the other had
// already run a second time; it is refused with ErrNotPaused now.
func TestHumanReview_AContinueOfARunContinuedSinceItWasReadIsRefused(t *testing.T) {
	t.Parallel()
	var a, b, c atomic.Int32
	first := counted("a", &a)
	first.HumanReview = &HumanReview{RequiresConfirmation: true}
	last := counted("c", &c)
	last.HumanReview = &HumanReview{RequiresConfirmation: true}
	d := openDB(t)
	wf := mustNew(t, Config{ID: "double-submit", DB: d, Steps: []Step{first, counted("b", &b), last}})
	out, _ := wf.Run(context.Background(), run.TextInput("in"))
	answers := []run.StepRequirement{answer(out.StepRequirements[0], yes())}
	// ContinueRun in its two halves: the late continue reads the run ...
	late, j, o, err := wf.resume(context.Background(), out.RunID, answers, nil)
	if err != nil {
		t.Fatal(err)
	}
	// ... another continue runs it to its next pause ...
	if done, err := wf.ContinueRun(context.Background(), out.RunID, answers); err != nil || done.Status != run.StatusPaused {
		t.Fatalf("first continue = %+v, %v", done, err)
	}
	// ... and the late one goes on.
	if _, err := wf.execute(context.Background(), late, j, o, nil); !errors.Is(err, ErrNotPaused) {
		t.Errorf("late continue: %v, want ErrNotPaused", err)
	}
	if a.Load() != 1 || b.Load() != 1 || c.Load() != 0 {
		t.Errorf("runs: a=%d b=%d c=%d, want 1 1 0", a.Load(), b.Load(), c.Load())
	}
	_, stored := storedRun(t, d, out.RunID)
	if len(stored.StepRequirements) != 1 || stored.StepRequirements[0].StepName != "c" {
		t.Errorf("stored requirements = %+v, want c's", stored.StepRequirements)
	}
	if done, err := wf.ContinueRun(context.Background(), out.RunID, []run.StepRequirement{answer(stored.StepRequirements[0], yes())}); err != nil || done.Content != "in>a>b>c" {
		t.Errorf("continue of the new pause = %+v, %v", done, err)
	}
}

// A user's answer read from JSON (a continue request, a stored run) holds an
// integer beyond 2^53 exactly (a json.Number since run keeps such numbers
// exact): an int field takes it as that integer and a float field as the
// nearest float, where the int field refused it as invalid input.
func TestHumanReview_UserInputBeyondFloatPrecisionIsExact(t *testing.T) {
	t.Parallel()
	var n atomic.Int32
	s := counted("b", &n)
	s.HumanReview = &HumanReview{RequiresUserInput: true, UserInputSchema: []run.UserInputField{
		{Name: "id", FieldType: "int", Required: true},
		{Name: "weight", FieldType: "float", Required: true},
	}}
	wf := mustNew(t, Config{ID: "exact", DB: openDB(t), Steps: []Step{s}})
	out, _ := wf.Run(context.Background(), run.TextInput("in"))
	raw, err := json.Marshal(out.StepRequirements[0])
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	m["user_input"] = json.RawMessage(`{"id": 9007199254740993, "weight": 12345678901234567890}`)
	if raw, err = json.Marshal(m); err != nil {
		t.Fatal(err)
	}
	var req run.StepRequirement
	if err := json.Unmarshal(raw, &req); err != nil {
		t.Fatal(err)
	}
	done, err := wf.ContinueRun(context.Background(), out.RunID, []run.StepRequirement{req})
	if err != nil {
		t.Fatal(err)
	}
	if done.Content != `in>b{"id":9007199254740993,"weight":12345678901234567000}` || n.Load() != 1 {
		t.Errorf("continued = %v %v", done.Content, err)
	}
}
