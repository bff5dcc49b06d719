package agentos

import (
	"errors"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"

	"github.com/agentryhq/agentry/db"
)

// maxMemoryChars bounds a memory's text, as AgentOS's UserMemoryCreateSchema does.
const maxMemoryChars = 5000

// memoryView is AgentOS's UserMemorySchema.
type memoryView struct {
	MemoryID  string   `json:"memory_id"`
	Memory    string   `json:"memory"`
	Topics    []string `json:"topics"`
	AgentID   *string  `json:"agent_id"`
	TeamID    *string  `json:"team_id"`
	UserID    *string  `json:"user_id"`
	UpdatedAt *string  `json:"updated_at"`
}

func newMemoryView(m *db.Memory) memoryView {
	topics := m.Topics
	if topics == nil {
		topics = []string{}
	}
	return memoryView{MemoryID: m.MemoryID, Memory: m.Memory, Topics: topics, AgentID: optional(m.AgentID),
		TeamID: optional(m.TeamID), UserID: optional(m.UserID), UpdatedAt: isoTime(m.UpdatedAt)}
}

// userStatsView is AgentOS's UserStatsSchema.
type userStatsView struct {
	UserID              string  `json:"user_id"`
	TotalMemories       int     `json:"total_memories"`
	LastMemoryUpdatedAt *string `json:"last_memory_updated_at"`
}

// checkTopics applies db.MaxMemoryTopics to a memory's topics.
func checkTopics(topics []string) error {
	if len(topics) > db.MaxMemoryTopics {
		return errorf(http.StatusUnprocessableEntity, "topics must list at most %d topics, got %d", db.MaxMemoryTopics, len(topics))
	}
	return nil
}

// checkMemoryText validates a memory's text: non-blank, at most maxMemoryChars.
func checkMemoryText(text string) error {
	if strings.TrimSpace(text) == "" {
		return errorf(http.StatusUnprocessableEntity, "memory is required and must not be blank")
	}
	if n := utf8.RuneCountInString(text); n > maxMemoryChars {
		return errorf(http.StatusUnprocessableEntity, "memory must be at most %d characters, got %d", maxMemoryChars, n)
	}
	return nil
}

// memoryTopicsQuery reads ?topics= as AgentOS does: comma-separated values
// (repeating the parameter also works); blanks are dropped.
func memoryTopicsQuery(q url.Values) []string {
	var out []string
	for _, v := range q["topics"] {
		for t := range strings.SplitSeq(v, ",") {
			if t = strings.TrimSpace(t); t != "" {
				out = append(out, t)
			}
		}
	}
	return out
}

var memoryPageRules = pageRules{SortColumns: db.MemorySortColumns, DefaultOrder: db.Desc}

func (s *Server) listMemories(w http.ResponseWriter, r *http.Request) error {
	start := time.Now()
	d, err := s.database(r)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	pq, err := parsePageQuery(q, memoryPageRules)
	if err != nil {
		return err
	}
	mems, total, err := d.ListMemories(r.Context(), db.MemoryFilter{
		UserID:        actAs(r.Context(), q.Get("user_id")).id,
		AgentID:       q.Get("agent_id"),
		TeamID:        q.Get("team_id"),
		Topics:        memoryTopicsQuery(q),
		SearchContent: q.Get("search_content"),
		Limit:         pq.Limit,
		Page:          pq.Page,
		SortBy:        pq.SortBy,
		SortOrder:     pq.SortOrder,
	})
	if err = s.leaveOutCorrupt(r.Context(), "list memories", err); err != nil {
		return err
	}
	views := make([]memoryView, 0, len(mems))
	for i := range mems {
		views = append(views, newMemoryView(&mems[i]))
	}
	writePage(w, views, pq, total, time.Since(start))
	return nil
}

// loadMemory fetches the {memory_id} memory: 404 when missing, of another user
// (the db scope hides it), or not owned by an explicit user_id (requested).
func (s *Server) loadMemory(r *http.Request, requested string) (*db.DB, *db.Memory, error) {
	d, err := s.database(r)
	if err != nil {
		return nil, nil, err
	}
	id := chi.URLParam(r, "memory_id")
	m, err := d.GetMemory(r.Context(), id)
	if errors.Is(err, db.ErrNotFound) || (err == nil && !actAs(r.Context(), requested).owns(m.UserID)) {
		return nil, nil, errorf(http.StatusNotFound, "Memory with ID %s not found", id)
	}
	if err != nil {
		return nil, nil, err
	}
	return d, m, nil
}

func (s *Server) getMemory(w http.ResponseWriter, r *http.Request) error {
	_, m, err := s.loadMemory(r, r.URL.Query().Get("user_id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, newMemoryView(m))
	return nil
}

// createMemoryRequest is AgentOS's UserMemoryCreateSchema.
type createMemoryRequest struct {
	Memory string   `json:"memory"`
	Topics []string `json:"topics"`
	UserID string   `json:"user_id"`
}

func (s *Server) createMemory(w http.ResponseWriter, r *http.Request) error {
	d, err := s.database(r)
	if err != nil {
		return err
	}
	var req createMemoryRequest
	if err := decodeJSONBody(r, &req); err != nil {
		return err
	}
	if err := errors.Join(checkMemoryText(req.Memory), checkTopics(req.Topics), checkBodyID("user_id", req.UserID)); err != nil {
		return err
	}
	userID := actAs(r.Context(), req.UserID).id
	if userID == "" {
		return errorf(http.StatusBadRequest, "User ID is required")
	}
	topics := req.Topics
	if topics == nil {
		topics = []string{}
	}
	saved, err := d.UpsertMemory(r.Context(), &db.Memory{MemoryID: uuid.NewString(), Memory: req.Memory, Topics: topics, UserID: userID})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, newMemoryView(saved))
	return nil
}

// patchMemoryRequest changes a memory's text and/or topics. Omitted (or null)
// fields keep their value; "topics": [] clears them. user_id, for an unscoped
// caller, must name the owner (else 404); a scoped caller's is ignored.
type patchMemoryRequest struct {
	Memory *string   `json:"memory"`
	Topics *[]string `json:"topics"`
	UserID string    `json:"user_id"`
}

func (s *Server) patchMemory(w http.ResponseWriter, r *http.Request) error {
	var req patchMemoryRequest
	if err := decodeJSONBody(r, &req); err != nil {
		return err
	}
	if req.Memory == nil && req.Topics == nil {
		return errorf(http.StatusUnprocessableEntity, "nothing to update: give memory and/or topics")
	}
	if req.Memory != nil {
		if err := checkMemoryText(*req.Memory); err != nil {
			return err
		}
	}
	if req.Topics != nil {
		if err := checkTopics(*req.Topics); err != nil {
			return err
		}
	}
	d, m, err := s.loadMemory(r, req.UserID)
	if err != nil {
		return err
	}
	if req.Memory != nil {
		m.Memory = *req.Memory
	}
	if req.Topics != nil {
		m.Topics = *req.Topics
		if m.Topics == nil {
			m.Topics = []string{}
		}
	}
	saved, err := d.UpsertMemory(r.Context(), m)
	if errors.Is(err, db.ErrNotFound) {
		// Deleted or handed to another user since loadMemory.
		return &httpError{Status: http.StatusNotFound, Detail: "Memory with ID " + m.MemoryID + " not found"}
	}
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, newMemoryView(saved))
	return nil
}

func (s *Server) deleteMemory(w http.ResponseWriter, r *http.Request) error {
	d, m, err := s.loadMemory(r, r.URL.Query().Get("user_id"))
	if err != nil {
		return err
	}
	if err := d.DeleteMemories(r.Context(), m.MemoryID); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) deleteMemories(w http.ResponseWriter, r *http.Request) error {
	d, err := s.database(r)
	if err != nil {
		return err
	}
	var req struct {
		MemoryIDs []string `json:"memory_ids"`
		UserID    string   `json:"user_id"`
	}
	if err := decodeJSONBody(r, &req); err != nil {
		return err
	}
	if len(req.MemoryIDs) == 0 {
		return errorf(http.StatusUnprocessableEntity, "memory_ids must list at least one memory")
	}
	// The db scope limits deletion to the caller's memories (an unscoped
	// caller's user_id narrows it); other ids are ignored like missing ones.
	if err := d.DeleteMemories(actAs(r.Context(), req.UserID).scope(r.Context()), req.MemoryIDs...); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) memoryTopics(w http.ResponseWriter, r *http.Request) error {
	d, err := s.database(r)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	if _, _, err := parseSortQuery(q, pageRules{}); err != nil {
		return err
	}
	topics, err := d.MemoryTopics(actAs(r.Context(), q.Get("user_id")).scope(r.Context()))
	if err != nil {
		return err
	}
	if topics == nil {
		topics = []string{}
	}
	writeJSON(w, http.StatusOK, topics)
	return nil
}

func (s *Server) userMemoryStats(w http.ResponseWriter, r *http.Request) error {
	start := time.Now()
	d, err := s.database(r)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	pq, err := parsePageQuery(q, pageRules{})
	if err != nil {
		return err
	}
	// user_id narrows the statistics to that user, as in Agno (a scoped
	// caller's own scope already does).
	stats, total, err := d.UserMemoryStats(actAs(r.Context(), q.Get("user_id")).scope(r.Context()), pq.Limit, pq.Page)
	if err != nil {
		return err
	}
	views := make([]userStatsView, 0, len(stats))
	for _, st := range stats {
		views = append(views, userStatsView{UserID: st.UserID, TotalMemories: st.TotalMemories, LastMemoryUpdatedAt: isoTime(st.LastMemoryUpdatedAt)})
	}
	writePage(w, views, pq, total, time.Since(start))
	return nil
}
