package agentos

import "context"

// startWorkflowTimeouts applies the HumanReview timeouts of workflow runs
// left PAUSED by an earlier process (OnTimeout for those past due, timers
// for the others), in the background: serving does not wait for it.
func (s *Server) startWorkflowTimeouts(ctx context.Context) {
	for _, w := range s.cfg.Workflows {
		if w.DB() == nil {
			continue
		}
		go func() {
			if n, err := w.ResumeExpired(context.WithoutCancel(ctx)); err != nil {
				s.log.Error("agentos: applying workflow review timeouts", "workflow_id", w.ID(), "err", err)
			} else if n > 0 {
				s.log.Info("agentos: applied workflow review timeouts", "workflow_id", w.ID(), "runs", n)
			}
		}()
	}
}

// stopWorkflowTimeouts stops the timers of paused runs; the next process
// applies them.
func (s *Server) stopWorkflowTimeouts() {
	for _, w := range s.cfg.Workflows {
		w.Close()
	}
}
