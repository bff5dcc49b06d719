package agentos

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"regexp"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"

	"github.com/agentryhq/agentry/db"
)

// learningView is AgentOS's LearningResponse.
type learningView struct {
	LearningID   string          `json:"learning_id"`
	LearningType string          `json:"learning_type"`
	Namespace    *string         `json:"namespace"`
	UserID       *string         `json:"user_id"`
	AgentID      *string         `json:"agent_id"`
	TeamID       *string         `json:"team_id"`
	SessionID    *string         `json:"session_id"`
	EntityID     *string         `json:"entity_id"`
	EntityType   *string         `json:"entity_type"`
	Content      json.RawMessage `json:"content"`
	Metadata     json.RawMessage `json:"metadata"`
	CreatedAt    *int64          `json:"created_at"`
	UpdatedAt    *int64          `json:"updated_at"`
}

func newLearningView(l *db.Learning) learningView {
	v := learningView{LearningID: l.LearningID, LearningType: l.LearningType, Namespace: optional(l.Namespace), UserID: optional(l.UserID),
		AgentID: optional(l.AgentID), TeamID: optional(l.TeamID), SessionID: optional(l.SessionID), EntityID: optional(l.EntityID),
		EntityType: optional(l.EntityType), Content: nullIfEmpty(l.Content), Metadata: nullIfEmpty(l.Metadata)}
	if l.CreatedAt != 0 {
		v.CreatedAt = &l.CreatedAt
	}
	if l.UpdatedAt != 0 {
		v.UpdatedAt = &l.UpdatedAt
	}
	return v
}

// identityKeyed are the learning types whose id Agno derives from their
// identity fields (a POST must use the same id, or the agent never finds it).
var identityKeyed = map[string]bool{"user_profile": true, "user_memory": true, "session_context": true, "entity_memory": true}

// reservedEntityNamespace is the key shape of entity memories under the
// "user" namespace: a custom namespace of that shape could collide.
var reservedEntityNamespace = regexp.MustCompile(`^user_[0-9a-f]{16}(_.*)?$`)

// learningID is Agno's build_learning_id: "" when the type is identity-keyed
// and a field its key needs is missing, a new UUID for other types.
func learningID(typ, namespace, userID, sessionID, entityType, entityID string) string {
	switch typ {
	case "user_profile":
		return prefixed("user_profile_", userID)
	case "user_memory":
		return prefixed("memories_", userID)
	case "session_context":
		return prefixed("session_context_", sessionID)
	case db.EntityLearningType:
		return db.EntityLearningID(namespace, userID, entityType, entityID)
	}
	return uuid.NewString()
}

func prefixed(prefix, id string) string {
	if id == "" {
		return ""
	}
	return prefix + id
}

var learningPageRules = pageRules{DefaultLimit: 100, SortColumns: db.LearningSortColumns, DefaultOrder: db.Desc}

// learningsError maps a driver without learnings to 501, as AgentOS does.
func learningsError(err error) error {
	if errors.Is(err, db.ErrUnsupported) {
		return errorf(http.StatusNotImplemented, "Learnings not supported by the configured database")
	}
	return err
}

// listLearnings pages the learnings the caller may read: a scoped caller
// sees its own and the shared ones (a user_id naming another user finds
// nothing, as elsewhere on this server, where AgentOS answers 403).
func (s *Server) listLearnings(w http.ResponseWriter, r *http.Request) error {
	start := time.Now()
	d, err := s.database(r)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	pq, err := parsePageQuery(q, learningPageRules)
	if err != nil {
		return err
	}
	ctx := r.Context()
	f := db.LearningFilter{LearningType: q.Get("learning_type"), UserID: q.Get("user_id"), AgentID: q.Get("agent_id"), TeamID: q.Get("team_id"),
		SessionID: q.Get("session_id"), Namespace: q.Get("namespace"), EntityID: q.Get("entity_id"), EntityType: q.Get("entity_type"),
		Limit: pq.Limit, Page: pq.Page, SortBy: pq.SortBy, SortOrder: pq.SortOrder}
	if u := actAs(ctx, ""); u.scoped && f.UserID != "" && f.UserID != u.id {
		writePage(w, []learningView{}, pq, 0, time.Since(start))
		return nil
	}
	ls, total, err := d.ListLearnings(ctx, f)
	if err = s.leaveOutCorrupt(ctx, "list learnings", err); err != nil {
		return learningsError(err)
	}
	views := make([]learningView, 0, len(ls))
	for i := range ls {
		views = append(views, newLearningView(&ls[i]))
	}
	writePage(w, views, pq, total, time.Since(start))
	return nil
}

// createLearningRequest is AgentOS's LearningCreate.
type createLearningRequest struct {
	LearningType string          `json:"learning_type"`
	Content      json.RawMessage `json:"content"`
	Namespace    string          `json:"namespace"`
	UserID       string          `json:"user_id"`
	AgentID      string          `json:"agent_id"`
	TeamID       string          `json:"team_id"`
	SessionID    string          `json:"session_id"`
	EntityID     string          `json:"entity_id"`
	EntityType   string          `json:"entity_type"`
	Metadata     json.RawMessage `json:"metadata"`
}

// createLearning stores a learning under Agno's deterministic id. A scoped
// caller's learning is always its own (AgentOS would let it create a shared
// one; shared rows are an admin's here, as their changes are).
func (s *Server) createLearning(w http.ResponseWriter, r *http.Request) error {
	d, err := s.database(r)
	if err != nil {
		return err
	}
	var req createLearningRequest
	if err := decodeJSONBody(r, &req); err != nil {
		return err
	}
	for name, v := range map[string]string{"learning_type": req.LearningType, "namespace": req.Namespace, "user_id": req.UserID,
		"agent_id": req.AgentID, "team_id": req.TeamID, "session_id": req.SessionID, "entity_id": req.EntityID, "entity_type": req.EntityType} {
		if err := checkBodyID(name, v); err != nil {
			return err
		}
	}
	if req.LearningType == "" {
		return errorf(http.StatusUnprocessableEntity, "learning_type is required")
	}
	if !isJSONObject(req.Content) {
		return errorf(http.StatusUnprocessableEntity, "content is required and must be an object")
	}
	ctx := r.Context()
	userID := actAs(ctx, req.UserID).id
	if req.LearningType == db.EntityLearningType && reservedEntityNamespace.MatchString(req.Namespace) {
		return errorf(http.StatusUnprocessableEntity, "namespace '%s' is reserved: it has the key shape entity_memory uses for namespace=\"user\" records", req.Namespace)
	}
	id := learningID(req.LearningType, req.Namespace, userID, req.SessionID, req.EntityType, req.EntityID)
	if id == "" {
		return errorf(http.StatusUnprocessableEntity, "learning_type '%s' is keyed by its identity fields; provide the fields its key needs", req.LearningType)
	}
	ns := req.Namespace
	if req.LearningType == db.EntityLearningType && ns == "" {
		ns = "global"
	}
	if identityKeyed[req.LearningType] {
		if _, err := d.GetLearning(ctx, id); err == nil {
			return errorf(http.StatusConflict, "A '%s' learning already exists for this identity (id '%s'). Use PATCH /learnings/%s to update it.", req.LearningType, id, id)
		} else if !errors.Is(err, db.ErrNotFound) {
			return learningsError(err)
		}
	}
	saved, err := d.UpsertLearning(ctx, &db.Learning{LearningID: id, LearningType: req.LearningType, Namespace: ns, UserID: userID,
		AgentID: req.AgentID, TeamID: req.TeamID, SessionID: req.SessionID, EntityID: req.EntityID, EntityType: req.EntityType,
		Content: req.Content, Metadata: req.Metadata})
	if errors.Is(err, db.ErrNotFound) {
		// The derived id is another user's or a shared row's.
		return errorf(http.StatusConflict, "A '%s' learning already exists for this identity (id '%s').", req.LearningType, id)
	}
	if err != nil {
		return learningsError(err)
	}
	writeJSON(w, http.StatusCreated, newLearningView(saved))
	return nil
}

func isJSONObject(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return len(t) > 0 && t[0] == '{' && json.Valid(t)
}

// learningUserView is AgentOS's LearningUserStats.
type learningUserView struct {
	UserID                string `json:"user_id"`
	LastLearningUpdatedAt *int64 `json:"last_learning_updated_at"`
}

func (s *Server) listLearningUsers(w http.ResponseWriter, r *http.Request) error {
	start := time.Now()
	d, err := s.database(r)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	pq, err := parsePageQuery(q, pageRules{SortColumns: []string{"last_learning_updated_at"}, DefaultOrder: db.Desc})
	if err != nil {
		return err
	}
	// The users are listed most recently updated first; Agno's default
	// sort_order (desc) is accepted, asc would be ignored.
	if pq.SortOrder != db.Desc {
		return errorf(http.StatusUnprocessableEntity, "sort_order must be desc: learning users are listed most recently updated first")
	}
	ctx := r.Context()
	user := q.Get("user_id")
	if u := actAs(ctx, ""); u.scoped && user != "" && user != u.id {
		writePage(w, []learningUserView{}, pq, 0, time.Since(start))
		return nil
	}
	users, total, err := d.LearningUsers(ctx, q.Get("learning_type"), user, pq.Limit, pq.Page)
	if err != nil {
		return learningsError(err)
	}
	views := make([]learningUserView, 0, len(users))
	for _, u := range users {
		v := learningUserView{UserID: u.UserID}
		if u.LastLearningUpdatedAt != 0 {
			t := u.LastLearningUpdatedAt
			v.LastLearningUpdatedAt = &t
		}
		views = append(views, v)
	}
	if pq.SortOrder == db.Asc {
		for i, j := 0, len(views)-1; i < j; i, j = i+1, j-1 {
			views[i], views[j] = views[j], views[i]
		}
	}
	writePage(w, views, pq, total, time.Since(start))
	return nil
}

// deleteLearningUser deletes a user's learnings; another user's are a 404
// for a scoped caller (AgentOS answers 403), shared rows are kept.
func (s *Server) deleteLearningUser(w http.ResponseWriter, r *http.Request) error {
	d, err := s.database(r)
	if err != nil {
		return err
	}
	user := chi.URLParam(r, "user_id")
	err = d.DeleteUserLearnings(r.Context(), user, r.URL.Query().Get("learning_type"))
	if errors.Is(err, db.ErrNotFound) {
		return errorf(http.StatusNotFound, "Learnings of user %s not found", user)
	}
	if err != nil {
		return learningsError(err)
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// loadLearning fetches {learning_id} for the caller: 404 when missing or
// another user's; for a change (write), 403 when it is a shared row and the
// caller is scoped (only admins change shared learnings, as AgentOS).
func (s *Server) loadLearning(r *http.Request, write bool) (*db.DB, *db.Learning, error) {
	d, err := s.database(r)
	if err != nil {
		return nil, nil, err
	}
	id := chi.URLParam(r, "learning_id")
	l, err := d.GetLearning(r.Context(), id)
	if errors.Is(err, db.ErrNotFound) {
		return nil, nil, errorf(http.StatusNotFound, "Learning not found")
	}
	if err != nil {
		return nil, nil, learningsError(err)
	}
	if write && l.UserID == "" && actAs(r.Context(), "").scoped {
		return nil, nil, errorf(http.StatusForbidden, "Only admins can modify learnings that have no owner (user_id is null)")
	}
	return d, l, nil
}

func (s *Server) getLearning(w http.ResponseWriter, r *http.Request) error {
	_, l, err := s.loadLearning(r, false)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, newLearningView(l))
	return nil
}

// patchLearningRequest is AgentOS's LearningUpdate: identity is immutable.
type patchLearningRequest struct {
	Content  json.RawMessage `json:"content"`
	Metadata json.RawMessage `json:"metadata"`
}

func (s *Server) patchLearning(w http.ResponseWriter, r *http.Request) error {
	var req patchLearningRequest
	if err := decodeJSONBody(r, &req); err != nil {
		return err
	}
	if req.Content != nil && string(bytes.TrimSpace(req.Content)) == "null" {
		return errorf(http.StatusUnprocessableEntity, "content cannot be null; omit the field to leave it unchanged")
	}
	if req.Content != nil && !isJSONObject(req.Content) {
		return errorf(http.StatusUnprocessableEntity, "content must be an object")
	}
	d, l, err := s.loadLearning(r, true)
	if err != nil {
		return err
	}
	if req.Content != nil {
		l.Content = req.Content
	}
	if req.Metadata != nil {
		l.Metadata = req.Metadata
	}
	saved, err := d.UpsertLearning(r.Context(), l)
	if errors.Is(err, db.ErrNotFound) {
		return errorf(http.StatusNotFound, "Learning not found")
	}
	if err != nil {
		return learningsError(err)
	}
	writeJSON(w, http.StatusOK, newLearningView(saved))
	return nil
}

func (s *Server) deleteLearning(w http.ResponseWriter, r *http.Request) error {
	d, l, err := s.loadLearning(r, true)
	if err != nil {
		return err
	}
	if err := d.DeleteLearning(r.Context(), l.LearningID); err != nil && !errors.Is(err, db.ErrNotFound) {
		return learningsError(err)
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
