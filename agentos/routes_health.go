package agentos

import (
	"context"
	"net/http"
	"strconv"
	"sync"
)

// ReadyPath is the readiness route: GET answers 200 {"status":"ready"} when
// every database the OS serves answers within its query timeout, else 503
// {"detail"}. /health stays the liveness check (as in Agno): it answers
// while the process serves, whatever the database does.
const ReadyPath = "/health/ready"

func (s *Server) getHealth(w http.ResponseWriter, _ *http.Request) error {
	writeJSON(w, http.StatusOK, map[string]string{
		"status":          "ok",
		"instantiated_at": strconv.FormatFloat(float64(s.startedAt.UnixMicro())/1e6, 'f', 6, 64),
	})
	return nil
}

// getReady pings every database at once; the detail names none of them
// (the route is open to unauthenticated probes), the log names the failing
// ones with their errors.
func (s *Server) getReady(w http.ResponseWriter, r *http.Request) error {
	errs := make([]error, len(s.dbs))
	var wg sync.WaitGroup
	for i, d := range s.dbs {
		wg.Go(func() { errs[i] = d.Ping(context.WithoutCancel(r.Context())) })
	}
	wg.Wait()
	ready := true
	for i, err := range errs {
		if err != nil {
			ready = false
			s.log.WarnContext(r.Context(), "not ready: database unavailable", "request_id", requestID(r.Context()), "db_id", s.dbs[i].ID, "err", err)
		}
	}
	if !ready {
		writeError(w, http.StatusServiceUnavailable, "not ready: "+detailDBUnavailable)
		return nil
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
	return nil
}
