package agentos

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/agentryhq/agentry/agentos/auth"
	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/migrate"
)

// requireAdmin answers 403 unless the caller is an admin (the security key or
// a token with agent_os:admin). An open server (no authentication) allows all.
func (s *Server) requireAdmin(next http.Handler) http.Handler {
	if !s.cfg.Auth.Authenticator.Enabled() {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p, ok := auth.FromContext(r.Context()); !ok || !p.Admin {
			writeError(w, http.StatusForbidden, "Insufficient permissions: requires "+auth.AdminScope)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// targetVersion reads target_version from the query or a JSON body
// {"target_version": "..."}; empty means the latest version. A leading "v" is
// accepted. Unknown versions and conflicting values are 422.
func targetVersion(r *http.Request) (string, error) {
	target := r.URL.Query().Get("target_version")
	var body struct {
		TargetVersion string `json:"target_version"`
	}
	if err := decodeJSONBody(r, &body); err != nil && !errors.Is(err, io.EOF) {
		return "", err
	}
	switch {
	case target == "":
		target = body.TargetVersion
	case body.TargetVersion != "" && strings.TrimPrefix(body.TargetVersion, "v") != strings.TrimPrefix(target, "v"):
		return "", errorf(http.StatusUnprocessableEntity, "target_version differs between the query (%s) and the body (%s)", target, body.TargetVersion)
	}
	target = strings.TrimPrefix(strings.TrimSpace(target), "v")
	if target != "" && !slices.Contains(migrate.Versions, target) {
		return "", errorf(http.StatusUnprocessableEntity, "target_version must be one of: %s", strings.Join(migrate.Versions, ", "))
	}
	return target, nil
}

func versionMessage(target string) string {
	if target == "" {
		return "latest version"
	}
	return "version " + target
}

// migrateDB moves one database's tables to target (empty: latest): Up when the
// sessions table is at or below target, Down when above, as AgentOS does.
func (s *Server) migrateDB(ctx context.Context, d *db.DB, target string) error {
	m, release, err := migrate.ForDB(d, migrate.Config{Logger: s.log.With("db_id", d.ID)})
	if err != nil {
		return err
	}
	defer release()
	if target == "" {
		_, err = m.Up(ctx, migrate.Latest)
		return err
	}
	down, err := sessionsAbove(ctx, m, target)
	if err != nil {
		return err
	}
	if down {
		_, err = m.Down(ctx, target)
	} else {
		_, err = m.Up(ctx, target)
	}
	return err
}

// sessionsAbove reports whether the sessions table is at a newer version than
// target (the sessions table stands for the database, as in AgentOS). It
// reads versions only: Status would also read the whole legacy runs column.
func sessionsAbove(ctx context.Context, m *migrate.Manager, target string) (bool, error) {
	sts, err := m.TableVersions(ctx)
	if err != nil {
		return false, err
	}
	for _, st := range sts {
		if st.Kind == migrate.KindSessions {
			return slices.Index(migrate.Versions, st.Current) > slices.Index(migrate.Versions, target), nil
		}
	}
	return false, nil
}

// migrateAll migrates every database: 200 when all migrated; 207 with the
// failures (db_id → error) when some failed. Databases without a versioned
// schema are listed under "skipped".
func (s *Server) migrateAll(w http.ResponseWriter, r *http.Request) error {
	target, err := targetVersion(r)
	if err != nil {
		return err
	}
	failed := map[string]string{}
	skipped := []string{}
	for _, d := range s.dbs {
		err := s.migrateDB(r.Context(), d, target)
		switch {
		case errors.Is(err, migrate.ErrNotSQL):
			skipped = append(skipped, d.ID)
		case err != nil:
			s.log.ErrorContext(r.Context(), "migrate failed", "request_id", requestID(r.Context()), "db_id", d.ID, "err", err)
			failed[d.ID] = err.Error()
		}
	}
	total := len(s.dbs) - len(skipped)
	if len(failed) > 0 {
		writeJSON(w, http.StatusMultiStatus, map[string]any{
			"message": fmt.Sprintf("Migrated %d/%d databases to %s", total-len(failed), total, versionMessage(target)),
			"failed":  failed,
			"skipped": skipped,
		})
		return nil
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"message": "All databases migrated successfully to " + versionMessage(target),
		"skipped": skipped,
	})
	return nil
}

// migrateOne migrates the {db_id} database: 404 when unknown, 409 while
// another migration holds it, 422 for a target down cannot restore, 500 with
// the cause when the migration fails.
func (s *Server) migrateOne(w http.ResponseWriter, r *http.Request) error {
	d, ok := s.dbByID[chi.URLParam(r, "db_id")]
	if !ok {
		return errorf(http.StatusNotFound, "Database not found")
	}
	target, err := targetVersion(r)
	if err != nil {
		return err
	}
	err = s.migrateDB(r.Context(), d, target)
	switch {
	case errors.Is(err, migrate.ErrNotSQL):
		writeJSON(w, http.StatusOK, map[string]any{"message": "Database " + d.ID + " has no versioned schema; nothing to migrate", "skipped": []string{d.ID}})
	case errors.Is(err, migrate.ErrLocked):
		writeError(w, http.StatusConflict, err.Error())
	case errors.Is(err, migrate.ErrCannotRestore):
		writeError(w, http.StatusUnprocessableEntity, err.Error())
	case err != nil:
		s.log.ErrorContext(r.Context(), "migrate failed", "request_id", requestID(r.Context()), "db_id", d.ID, "err", err)
		writeError(w, http.StatusInternalServerError, "Failed to migrate database: "+err.Error())
	default:
		writeJSON(w, http.StatusOK, map[string]string{"message": "Database migrated successfully to " + versionMessage(target)})
	}
	return nil
}
