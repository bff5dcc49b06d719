package agentos

import (
	"errors"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/agentryhq/agentry/queue"
)

// queueOrNotFound is the durable queue, or a 404 when background runs use
// the in-process runner (nothing to list).
func (s *Server) queueOrNotFound() (*queue.Queue, error) {
	if s.queue == nil {
		return nil, errorf(http.StatusNotFound, "the durable queue is off (queue.durable: false)")
	}
	return s.queue, nil
}

// listQueueJobs is GET /queue/jobs: a page of jobs, newest first, filtered
// by ?status=; a user-scoped caller sees its own jobs only. total_count is
// exact up to queue.ListCountAhead jobs past the page (queue.List).
func (s *Server) listQueueJobs(w http.ResponseWriter, r *http.Request) error {
	q, err := s.queueOrNotFound()
	if err != nil {
		return err
	}
	pq, err := parsePageQuery(r.URL.Query(), pageRules{})
	if err != nil {
		return err
	}
	status := r.URL.Query().Get("status")
	if status != "" && !slices.Contains(queue.Statuses, status) {
		return errorf(http.StatusUnprocessableEntity, "status must be one of: %s", strings.Join(queue.Statuses, ", "))
	}
	u := actAs(r.Context(), "")
	start := time.Now()
	jobs, total, err := q.List(r.Context(), queue.Filter{Status: status, UserID: u.id, Scoped: u.scoped, Limit: pq.Limit, Page: pq.Page})
	if err != nil {
		return err
	}
	writePage(w, jobs, pq, total, time.Since(start))
	return nil
}

// getQueueJob is GET /queue/jobs/{job_id}; another user's job is 404.
func (s *Server) getQueueJob(w http.ResponseWriter, r *http.Request) error {
	q, err := s.queueOrNotFound()
	if err != nil {
		return err
	}
	u := actAs(r.Context(), "")
	id := chi.URLParam(r, "job_id")
	j, err := q.Get(r.Context(), id, u.id, u.scoped)
	if errors.Is(err, queue.ErrNotFound) {
		return errorf(http.StatusNotFound, "Job with ID %s not found", id)
	}
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, j)
	return nil
}

// requeueQueueJob is POST /queue/jobs/{job_id}/requeue (admin): a failed or
// cancelled job goes back in line with max_attempts more attempts.
func (s *Server) requeueQueueJob(w http.ResponseWriter, r *http.Request) error {
	q, err := s.queueOrNotFound()
	if err != nil {
		return err
	}
	id := chi.URLParam(r, "job_id")
	j, err := q.Requeue(r.Context(), id)
	switch {
	case errors.Is(err, queue.ErrNotFound):
		return errorf(http.StatusNotFound, "Job with ID %s not found", id)
	case errors.Is(err, queue.ErrNotRequeueable):
		return &httpError{Status: http.StatusConflict, Detail: strings.TrimPrefix(err.Error(), "queue: "), Err: err}
	case err != nil:
		return err
	}
	writeJSON(w, http.StatusOK, j)
	return nil
}

// queueStats is GET /queue/stats: jobs by status and the oldest queued
// job's age (a user-scoped caller's own jobs).
func (s *Server) queueStats(w http.ResponseWriter, r *http.Request) error {
	q, err := s.queueOrNotFound()
	if err != nil {
		return err
	}
	u := actAs(r.Context(), "")
	st, err := q.Stats(r.Context(), u.id, u.scoped)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, st)
	return nil
}
