package agentos

import (
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"
)

// routes mounts every route group; each domain lives in its routes_*.go.
func (s *Server) routes(r chi.Router) {
	r.Get("/health", s.getHealth)
}

func (s *Server) getHealth(w http.ResponseWriter, _ *http.Request) {
	WriteJSON(w, http.StatusOK, map[string]string{
		"status":          "ok",
		"instantiated_at": s.startedAt.UTC().Format(time.RFC3339Nano),
	})
}
