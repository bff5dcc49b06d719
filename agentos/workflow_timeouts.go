package agentos

import (
	"context"
	"time"
)

// defaultWorkflowTimeoutSweep is Config.WorkflowTimeoutSweep's default.
const defaultWorkflowTimeoutSweep = 30 * time.Second

// startWorkflowTimeouts applies the HumanReview timeouts of workflow runs
// left PAUSED by an earlier process (OnTimeout for those past due, timers
// for the others), in the background: serving does not wait for it. Then,
// every Config.WorkflowTimeoutSweep until ctx ends, it sweeps every
// workflow's paused runs for timeouts that passed (a replica that never
// restarts, or whose timers belong to another replica, still applies
// them). Each timeout is claimed in the database first, so with several
// replicas on one database one applies it. wait returns once the sweeper
// stopped (after ctx ends, and after the sweep in progress, whose runs are
// not cancelled with ctx, finished).
func (s *Server) startWorkflowTimeouts(ctx context.Context) (wait func()) {
	done := make(chan struct{})
	sweep := false
	for _, w := range s.cfg.Workflows {
		if w.DB() == nil {
			continue
		}
		sweep = true
		go func() {
			if n, err := w.ResumeExpired(context.WithoutCancel(ctx)); err != nil {
				s.log.Error("agentos: applying workflow review timeouts", "workflow_id", w.ID(), "err", err)
			} else if n > 0 {
				s.log.Info("agentos: applied workflow review timeouts", "workflow_id", w.ID(), "runs", n)
			}
		}()
	}
	go func() {
		defer close(done)
		if s.cfg.WorkflowTimeoutSweep <= 0 || !sweep {
			return
		}
		t := time.NewTicker(s.cfg.WorkflowTimeoutSweep)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				s.sweepWorkflowTimeouts(context.WithoutCancel(ctx))
			}
		}
	}()
	return func() { <-done }
}

// sweepWorkflowTimeouts applies the timeouts that passed, workflow by
// workflow.
func (s *Server) sweepWorkflowTimeouts(ctx context.Context) {
	now := time.Now()
	if s.sweepClock != nil {
		now = s.sweepClock()
	}
	for _, w := range s.cfg.Workflows {
		if w.DB() == nil {
			continue
		}
		if n, err := w.SweepTimeouts(ctx, now); err != nil {
			s.log.Error("agentos: sweeping workflow review timeouts", "workflow_id", w.ID(), "err", err)
		} else if n > 0 {
			s.log.Info("agentos: applied workflow review timeouts", "workflow_id", w.ID(), "runs", n)
		}
	}
}

// stopWorkflowTimeouts stops the timers of paused runs; the next process
// applies them.
func (s *Server) stopWorkflowTimeouts() {
	for _, w := range s.cfg.Workflows {
		w.Close()
	}
}
