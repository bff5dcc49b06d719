package agentos

import (
	"context"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/db/sqlite"
	"github.com/agentryhq/agentry/run"
	"github.com/agentryhq/agentry/workflow"
)

// TestServe_SweepsWorkflowTimeoutsWhileRunning: a run paused after the
// server started, whose timeout the in-process timer would apply only in
// an hour, is swept by the server's ticker once its (controlled) clock is
// past the timeout.
func TestServe_SweepsWorkflowTimeoutsWhileRunning(t *testing.T) {
	t.Parallel()
	d, err := sqlite.Open(context.Background(), sqlite.Config{Path: filepath.Join(t.TempDir(), "wf.db")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	var ran atomic.Int32
	step := workflow.Step{Name: "b", Func: func(context.Context, *workflow.StepInput) (workflow.FuncResult, error) {
		ran.Add(1)
		return workflow.FuncResult{Content: "approved by the clock"}, nil
	}, HumanReview: &workflow.HumanReview{RequiresConfirmation: true, Timeout: time.Hour, OnTimeout: workflow.OnTimeoutApprove}}
	wf, err := workflow.New(workflow.Config{ID: "slowreview", DB: d, Steps: []workflow.Step{step}})
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(Config{Workflows: []*workflow.Workflow{wf}, WorkflowTimeoutSweep: 20 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	var clock atomic.Int64
	clock.Store(time.Now().UnixNano())
	s.sweepClock = func() time.Time { return time.Unix(0, clock.Load()) }
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- s.Serve(ctx, ln) }()
	defer func() {
		stop()
		if err := <-served; err != nil {
			t.Error(err)
		}
	}()
	out, err := wf.Run(context.Background(), run.TextInput("go"), agent.WithUserID("alice"))
	if err != nil || out.Status != run.StatusPaused {
		t.Fatalf("run %v, %v", out, err)
	}
	// Sweeps before the timeout change nothing.
	time.Sleep(100 * time.Millisecond)
	if row, _ := d.GetRun(context.Background(), out.RunID); row.Status != run.StatusPaused || ran.Load() != 0 {
		t.Fatalf("before the timeout: %s, ran %d", row.Status, ran.Load())
	}
	clock.Add(int64(2 * time.Hour))
	deadline := time.Now().Add(30 * time.Second)
	for {
		row, err := d.GetRun(context.Background(), out.RunID)
		if err != nil {
			t.Fatal(err)
		}
		if row.Status == run.StatusCompleted {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the timeout the run is still %s", row.Status)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if ran.Load() != 1 {
		t.Errorf("the step ran %d times", ran.Load())
	}
}
