package agentos

import (
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/agentryhq/agentry/db"
)

// routes mounts every route group; each domain lives in its routes_*.go.
//
// Scopes checked when Auth.Authorization is on: config:read (/, /config),
// agents:read, teams:read, workflows:read, sessions:read, sessions:write,
// sessions:delete; per-object forms use the URL id (agents:<id>:read).
func (s *Server) routes(r chi.Router) {
	r.Get("/health", s.handle(s.getHealth))
	r.Get(ReadyPath, s.handle(s.getReady))
	s.rootRoutes(r)
	s.agentRoutes(r)
	s.runRoutes(r)
	s.teamRoutes(r)
	s.workflowRoutes(r)
	s.sessionRoutes(r)
	s.memoryRoutes(r)
	s.migrateRoutes(r)
}

// database resolves the db_id query parameter: empty means the default
// database; an unknown id is a 404.
func (s *Server) database(r *http.Request) (*db.DB, error) {
	id := r.URL.Query().Get("db_id")
	if id == "" {
		if len(s.dbs) == 0 {
			return nil, Errorf(http.StatusNotFound, "No database is configured")
		}
		return s.dbs[0], nil
	}
	d, ok := s.dbByID[id]
	if !ok {
		return nil, Errorf(http.StatusNotFound, "Database with ID %s not found", id)
	}
	return d, nil
}

// isoTime renders epoch seconds as AgentOS's ISO-8601 UTC timestamps; zero is null.
func isoTime(sec int64) *string {
	if sec == 0 {
		return nil
	}
	t := time.Unix(sec, 0).UTC().Format(time.RFC3339)
	return &t
}
