package agentos

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/internal/lossless"
	"github.com/agentryhq/agentry/internal/sessionline"
	"github.com/agentryhq/agentry/internal/wirecheck"
	"github.com/agentryhq/agentry/media"
	"github.com/agentryhq/agentry/model"
	"github.com/agentryhq/agentry/run"
)

// maxJSONBody bounds JSON request bodies of session and memory routes.
const maxJSONBody = 1 << 20

// decodeJSONBody reads a JSON object body strictly: unknown fields, trailing
// data, text that is not valid UTF-8 (encoding/json would store U+FFFD in
// place of invalid bytes) and strings holding a NUL are 422, a body over
// maxJSONBody is 413, and an empty body is an error wrapping io.EOF.
func decodeJSONBody(r *http.Request, v any) error {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxJSONBody+1))
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe):
		return err
	case err != nil:
		return &httpError{Status: http.StatusBadRequest, Detail: "could not read the request body", Err: err}
	case len(body) > maxJSONBody:
		return &http.MaxBytesError{Limit: maxJSONBody}
	case !utf8.Valid(body):
		return errorf(http.StatusUnprocessableEntity, "invalid JSON body: it is not valid UTF-8; send text encoded as UTF-8")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return &httpError{Status: http.StatusUnprocessableEntity, Detail: "invalid JSON body: " + strings.TrimPrefix(err.Error(), "json: "), Err: err}
	}
	if dec.More() {
		return errorf(http.StatusUnprocessableEntity, "invalid JSON body: trailing data")
	}
	if wirecheck.EscapesNUL(body) {
		return errorf(http.StatusUnprocessableEntity, `invalid JSON body: strings must not contain NUL characters (\u0000)`)
	}
	return nil
}

// checkBodyID validates an id given in a JSON body (wirecheck.CheckID): 422
// when refused.
func checkBodyID(name, v string) error {
	if err := wirecheck.CheckID(name, v); err != nil {
		return &httpError{Status: http.StatusUnprocessableEntity, Detail: err.Error()}
	}
	return nil
}

// sessionType reads ?type=; empty gives def ("" means any).
func sessionType(r *http.Request, def run.Type) (run.Type, error) {
	switch t := run.Type(r.URL.Query().Get("type")); t {
	case "":
		return def, nil
	case run.TypeAgent, run.TypeTeam, run.TypeWorkflow:
		return t, nil
	}
	return "", errorf(http.StatusUnprocessableEntity, "type must be agent, team or workflow")
}

// sessionView is one session as AgentOS lists it.
type sessionView struct {
	SessionID    string         `json:"session_id"`
	SessionName  string         `json:"session_name"`
	SessionState map[string]any `json:"session_state"`
	SessionType  run.Type       `json:"session_type"`
	UserID       *string        `json:"user_id"`
	AgentID      *string        `json:"agent_id"`
	TeamID       *string        `json:"team_id"`
	WorkflowID   *string        `json:"workflow_id"`
	CreatedAt    *string        `json:"created_at"`
	UpdatedAt    *string        `json:"updated_at"`
}

// sessionDetail adds the stored columns for GET /sessions/{id}.
type sessionDetail struct {
	sessionView
	AgentSessionID string          `json:"agent_session_id,omitempty"`
	SessionSummary json.RawMessage `json:"session_summary"`
	Metrics        json.RawMessage `json:"metrics"`
	TotalTokens    *int64          `json:"total_tokens"`
	AgentData      json.RawMessage `json:"agent_data,omitempty"`
	TeamData       json.RawMessage `json:"team_data,omitempty"`
	WorkflowData   json.RawMessage `json:"workflow_data,omitempty"`
	Metadata       json.RawMessage `json:"metadata"`
	// SessionData is the whole session_data of a workflow's session, as
	// Agno's workflow session detail shows it (null when empty).
	SessionData *json.RawMessage `json:"session_data,omitempty"`
	// ChatHistory is Agno's chat_history of an agent's or a team's session
	// (see chatHistory); a workflow's detail has none.
	ChatHistory *[]json.RawMessage `json:"chat_history,omitempty"`
}

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// sessionData decodes session_data, keeping unknown keys.
// Numbers are kept as written (json.Number): a session's data is shown and
// written back (rename, state update) without rounding integers beyond
// float64's precision that Python stored.
func sessionData(s *db.Session) map[string]any {
	m := map[string]any{}
	if len(s.SessionData) > 0 {
		_ = lossless.UnmarshalNumbers(s.SessionData, &m)
	}
	if m == nil {
		m = map[string]any{}
	}
	return m
}

// stateObject is a JSON object from a request whose numbers are kept as
// written (json.Number), so that a state's large integers are stored exactly.
type stateObject map[string]any

func (o *stateObject) UnmarshalJSON(b []byte) error {
	var m map[string]any
	if err := lossless.UnmarshalNumbers(b, &m); err != nil {
		return err
	}
	*o = m
	return nil
}

// newSessionView renders s; names holds the derived names of sessions
// without a stored one (see sessionNames).
func newSessionView(s *db.Session, names map[string]string) sessionView {
	data := sessionData(s)
	v := sessionView{
		SessionID:   s.SessionID,
		SessionType: s.SessionType,
		UserID:      optional(s.UserID),
		AgentID:     optional(s.AgentID),
		TeamID:      optional(s.TeamID),
		WorkflowID:  optional(s.WorkflowID),
		CreatedAt:   isoTime(s.CreatedAt),
		UpdatedAt:   isoTime(s.UpdatedAt),
	}
	if name, ok := storedSessionName(data); ok {
		v.SessionName = name
	} else {
		v.SessionName = names[s.SessionID]
	}
	v.SessionState, _ = data["session_state"].(map[string]any)
	return v
}

func newSessionDetail(s *db.Session, names map[string]string) sessionDetail {
	d := sessionDetail{sessionView: newSessionView(s, names), SessionSummary: nullIfEmpty(s.Summary), Metadata: nullIfEmpty(s.Metadata),
		AgentData: s.AgentData, TeamData: s.TeamData, WorkflowData: s.WorkflowData, Metrics: json.RawMessage("null")}
	if s.SessionType == run.TypeAgent {
		d.AgentSessionID = s.SessionID
	}
	if s.SessionType == run.TypeWorkflow {
		sd := nullIfEmpty(s.SessionData)
		d.SessionData = &sd
	}
	var data struct {
		Metrics json.RawMessage `json:"session_metrics"`
	}
	if len(s.SessionData) > 0 && json.Unmarshal(s.SessionData, &data) == nil && len(data.Metrics) > 0 {
		d.Metrics = data.Metrics
		var tok struct {
			TotalTokens *int64 `json:"total_tokens"`
		}
		if json.Unmarshal(data.Metrics, &tok) == nil {
			d.TotalTokens = tok.TotalTokens
		}
	}
	return d
}

func nullIfEmpty(b json.RawMessage) json.RawMessage {
	if len(b) == 0 {
		return json.RawMessage("null")
	}
	return b
}

var sessionPageRules = pageRules{SortColumns: db.SessionSortColumns, DefaultOrder: db.Desc}

func (s *Server) listSessions(w http.ResponseWriter, r *http.Request) error {
	start := time.Now()
	d, err := s.database(r)
	if err != nil {
		return err
	}
	// No ?type= lists every kind, as AgentOS 3.0 does.
	typ, err := sessionType(r, "")
	if err != nil {
		return err
	}
	pq, err := parsePageQuery(r.URL.Query(), sessionPageRules)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	sessions, total, err := d.ListSessions(r.Context(), db.SessionFilter{
		SessionType: typ,
		ComponentID: q.Get("component_id"),
		UserID:      actAs(r.Context(), q.Get("user_id")).id,
		SessionName: q.Get("session_name"),
		Limit:       pq.Limit,
		Page:        pq.Page,
		SortBy:      pq.SortBy,
		SortOrder:   pq.SortOrder,
	})
	if err = s.leaveOutCorrupt(r.Context(), "list sessions", err); err != nil {
		return err
	}
	names, err := s.sessionNames(r.Context(), d, sessions)
	if err != nil {
		return err
	}
	views := make([]sessionView, 0, len(sessions))
	for i := range sessions {
		views = append(views, newSessionView(&sessions[i], names))
	}
	writePage(w, views, pq, total, time.Since(start))
	return nil
}

// loadSession fetches the {session_id} session, 404 when missing, of another
// user, or of another type than an explicit ?type=.
func (s *Server) loadSession(r *http.Request) (*db.DB, *db.Session, error) {
	d, err := s.database(r)
	if err != nil {
		return nil, nil, err
	}
	typ, err := sessionType(r, "")
	if err != nil {
		return nil, nil, err
	}
	id := chi.URLParam(r, "session_id")
	sess, err := d.GetSession(r.Context(), id)
	if errors.Is(err, db.ErrNotFound) || (err == nil && !actAs(r.Context(), r.URL.Query().Get("user_id")).owns(sess.UserID)) ||
		(err == nil && typ != "" && sess.SessionType != typ) {
		return nil, nil, errorf(http.StatusNotFound, "Session with ID %s not found", id)
	}
	if err != nil {
		return nil, nil, err
	}
	return d, sess, nil
}

func (s *Server) getSession(w http.ResponseWriter, r *http.Request) error {
	d, sess, err := s.loadSession(r)
	if err != nil {
		return err
	}
	return s.writeSessionDetail(w, r, d, http.StatusOK, sess)
}

// writeSessionDetail answers with the session's detail, its name derived
// when none is stored.
func (s *Server) writeSessionDetail(w http.ResponseWriter, r *http.Request, d *db.DB, status int, sess *db.Session) error {
	names, err := s.sessionNames(r.Context(), d, []db.Session{*sess})
	if err != nil {
		return err
	}
	detail := newSessionDetail(sess, names)
	if sess.SessionType == run.TypeAgent || sess.SessionType == run.TypeTeam {
		history, err := s.chatHistory(r.Context(), d, sess.SessionID)
		if err != nil {
			return err
		}
		detail.ChatHistory = &history
	}
	writeJSON(w, status, detail)
	return nil
}

// chatHistory is Agno's get_chat_history of a session: the messages of its
// top-level runs (members' runs left out), in the session's order, of
// every status, without system and tool messages and without the history
// a run was given (from_history), each as stored. It reads at most
// maxSessionRuns runs; runs the store cannot decode are left out.
func (s *Server) chatHistory(ctx context.Context, d *db.DB, sessionID string) ([]json.RawMessage, error) {
	out := []json.RawMessage{}
	read := 0
	err := s.eachRunPage(ctx, d, db.RunFilter{SessionID: sessionID, Limit: sessionRunsPage}, "chat history", func(rows []db.Run, corrupt int) (bool, error) {
		read += len(rows) + corrupt
		for i := range rows {
			if rows[i].ParentRunID != "" {
				continue
			}
			o, err := rows[i].Output()
			if err != nil {
				return false, err
			}
			for j := range o.Messages {
				m := &o.Messages[j]
				if m.FromHistory || m.Role == model.RoleSystem || m.Role == model.RoleTool {
					continue
				}
				b, err := json.Marshal(m)
				if err != nil {
					return false, err
				}
				out = append(out, b)
			}
		}
		return read < maxSessionRuns, nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

type createSessionRequest struct {
	SessionID    string          `json:"session_id"`
	SessionName  string          `json:"session_name"`
	SessionState stateObject     `json:"session_state"`
	Metadata     json.RawMessage `json:"metadata"`
	UserID       string          `json:"user_id"`
	AgentID      string          `json:"agent_id"`
	TeamID       string          `json:"team_id"`
	WorkflowID   string          `json:"workflow_id"`
}

func (s *Server) createSession(w http.ResponseWriter, r *http.Request) error {
	d, err := s.database(r)
	if err != nil {
		return err
	}
	typ, err := sessionType(r, run.TypeAgent)
	if err != nil {
		return err
	}
	var req createSessionRequest
	if r.ContentLength != 0 {
		if err := decodeJSONBody(r, &req); err != nil {
			return err
		}
	}
	if err := checkJSONObject("metadata", req.Metadata); err != nil {
		return err
	}
	for name, v := range map[string]string{"session_id": req.SessionID, "user_id": req.UserID, "agent_id": req.AgentID,
		"team_id": req.TeamID, "workflow_id": req.WorkflowID} {
		if err := checkBodyID(name, v); err != nil {
			return err
		}
	}
	if req.SessionID == "" {
		req.SessionID = uuid.NewString()
	}
	data := map[string]any{}
	if req.SessionName != "" {
		data["session_name"] = req.SessionName
	}
	if req.SessionState != nil {
		data["session_state"] = map[string]any(req.SessionState)
	}
	// Created only where no row exists: one another process created in
	// between is found by the next read (409).
	sess := &db.Session{SessionID: req.SessionID, SessionType: typ, UserID: runUser(r.Context(), req.UserID).id,
		AgentID: req.AgentID, TeamID: req.TeamID, WorkflowID: req.WorkflowID, Metadata: nonNullJSON(req.Metadata),
		Expect: db.ExpectOf(nil)}
	if len(data) > 0 {
		sess.SessionData, _ = json.Marshal(data)
	}
	// Looked for and created in a turn of the session's line: a run
	// creating it here in between is not written over.
	var saved *db.Session
	err = sessionline.Default().Update(sessionline.Key{DB: d, ID: req.SessionID}, func() (*db.Session, error) {
		if _, err := d.GetSession(r.Context(), req.SessionID); err == nil {
			return nil, &httpError{Status: http.StatusConflict, Detail: "Session with ID " + req.SessionID + " already exists"}
		} else if !errors.Is(err, db.ErrNotFound) {
			return nil, err
		}
		var err error
		saved, err = d.UpsertSession(r.Context(), sess)
		return saved, err
	})
	if err != nil {
		return err
	}
	// A new session has no runs: nothing to derive a name from.
	writeJSON(w, http.StatusCreated, newSessionDetail(saved, nil))
	return nil
}

func nonNullJSON(b json.RawMessage) json.RawMessage {
	if len(b) == 0 || string(b) == "null" {
		return nil
	}
	return b
}

type patchSessionRequest struct {
	SessionName  *string         `json:"session_name"`
	SessionState stateObject     `json:"session_state"`
	Metadata     json.RawMessage `json:"metadata"`
	Summary      json.RawMessage `json:"summary"`
}

func (s *Server) patchSession(w http.ResponseWriter, r *http.Request) error {
	var req patchSessionRequest
	if err := decodeJSONBody(r, &req); err != nil {
		return err
	}
	if err := errors.Join(checkJSONObject("metadata", req.Metadata), checkJSONObject("summary", req.Summary)); err != nil {
		return err
	}
	return s.updateSession(w, r, req)
}

// checkJSONObject refuses (422) a body member that is neither a JSON object
// nor null (nor absent), as Agno's request models (a dict) do: a session's
// metadata or summary stored as a number, string or list is one Agno's
// clients cannot read back.
func checkJSONObject(name string, v json.RawMessage) error {
	t := bytes.TrimSpace(v)
	if len(t) == 0 || string(t) == "null" || t[0] == '{' {
		return nil
	}
	return errorf(http.StatusUnprocessableEntity, "%s must be a JSON object", name)
}

func (s *Server) renameSession(w http.ResponseWriter, r *http.Request) error {
	var req struct {
		SessionName string `json:"session_name"`
	}
	if err := decodeJSONBody(r, &req); err != nil {
		return err
	}
	if strings.TrimSpace(req.SessionName) == "" {
		return errorf(http.StatusUnprocessableEntity, "session_name is required")
	}
	return s.updateSession(w, r, patchSessionRequest{SessionName: &req.SessionName})
}

func (s *Server) updateSession(w http.ResponseWriter, r *http.Request, req patchSessionRequest) error {
	d, err := s.database(r)
	if err != nil {
		return err
	}
	// Read and written in a turn of the session's line: a run of the
	// session in progress here writes its changes over the edit instead of
	// writing its own earlier read over it (internal/sessionline).
	var saved *db.Session
	err = sessionline.Default().Update(sessionline.Key{DB: d, ID: chi.URLParam(r, "session_id")}, func() (*db.Session, error) {
		var err error
		saved, err = s.editSession(r, req)
		return saved, err
	})
	if err != nil {
		return err
	}
	return s.writeSessionDetail(w, r, d, http.StatusOK, saved)
}

// editSession reads the session, applies req and writes it.
func (s *Server) editSession(r *http.Request, req patchSessionRequest) (*db.Session, error) {
	d, sess, err := s.loadSession(r)
	if err != nil {
		return nil, err
	}
	// Written only over the row read (a compare-and-set): another
	// process's write in between makes the caller's Update read it again.
	sess.Expect = db.ExpectOf(sess)
	data := sessionData(sess)
	if req.SessionName != nil {
		data["session_name"] = *req.SessionName
	}
	if req.SessionState != nil {
		data["session_state"] = map[string]any(req.SessionState)
	}
	if sess.SessionData, err = json.Marshal(data); err != nil {
		return nil, err
	}
	if m := nonNullJSON(req.Metadata); m != nil {
		sess.Metadata = m
	}
	if sm := nonNullJSON(req.Summary); sm != nil {
		sess.Summary = sm
	}
	return d.UpsertSession(r.Context(), sess)
}

func (s *Server) deleteSession(w http.ResponseWriter, r *http.Request) error {
	d, sess, err := s.loadSession(r)
	var he *httpError
	if errors.As(err, &he) && he.Status == http.StatusNotFound && d == nil {
		// Deleted already, but its media were left: finish them.
		dd, derr := s.database(r)
		if derr != nil {
			return err
		}
		pending, legacy, ok, perr := s.pendingSession(r, dd, chi.URLParam(r, "session_id"))
		if perr != nil {
			return perr
		}
		if !ok {
			return err
		}
		if err := s.finishMedia(r.Context(), dd.ID, []*db.Session{pending}, [][]media.Reference{legacy}); err != nil {
			return err
		}
		w.WriteHeader(http.StatusNoContent)
		return nil
	}
	if err != nil {
		return err
	}
	if err := s.deleteSessions(r.Context(), d, []*db.Session{sess}); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) deleteSessionList(w http.ResponseWriter, r *http.Request) error {
	d, err := s.database(r)
	if err != nil {
		return err
	}
	var req struct {
		SessionIDs   []string   `json:"session_ids"`
		SessionTypes []run.Type `json:"session_types"`
	}
	if err := decodeJSONBody(r, &req); err != nil {
		return err
	}
	if len(req.SessionIDs) == 0 {
		return errorf(http.StatusUnprocessableEntity, "session_ids must list at least one session")
	}
	// session_types, as in Agno, gives the type of each listed session
	// (same length, else Agno's 400). Agno requires it; it stays optional
	// here. A listed session of another type than its own entry says is
	// not deleted.
	if req.SessionTypes != nil {
		if len(req.SessionTypes) != len(req.SessionIDs) {
			return errorf(http.StatusBadRequest, "Session IDs and session types must have the same length")
		}
		for _, st := range req.SessionTypes {
			switch st {
			case run.TypeAgent, run.TypeTeam, run.TypeWorkflow:
			default:
				return errorf(http.StatusUnprocessableEntity, "session_types: %q is not a session type; use agent, team or workflow", st)
			}
		}
	}
	// Only the caller's sessions are deleted; others are ignored like
	// missing ids, and nothing of theirs (rows or media) is touched. Each
	// is read first: its media are deleted after the rows.
	u := actAs(r.Context(), r.URL.Query().Get("user_id"))
	ctx := u.scope(r.Context())
	var owned []*db.Session
	seen := make(map[string]bool, len(req.SessionIDs))
	for i, id := range req.SessionIDs {
		if seen[id] {
			continue
		}
		seen[id] = true
		sess, err := d.GetSession(ctx, id)
		if errors.Is(err, db.ErrNotFound) {
			continue
		}
		if err != nil {
			return err
		}
		if req.SessionTypes != nil && sess.SessionType != req.SessionTypes[i] {
			continue
		}
		if u.owns(sess.UserID) {
			owned = append(owned, sess)
		}
	}
	if err := s.deleteSessions(ctx, d, owned); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// sessionRunsPage is the page size used to read a session's runs; maxSessionRuns
// bounds one response.
const (
	sessionRunsPage = 500
	maxSessionRuns  = 10000
)

func (s *Server) listSessionRuns(w http.ResponseWriter, r *http.Request) error {
	sortBy, order, err := parseSortQuery(r.URL.Query(), sessionRunsSort)
	if err != nil {
		return err
	}
	created, err := parseCreatedRange(r.URL.Query())
	if err != nil {
		return err
	}
	d, sess, err := s.loadSession(r)
	if err != nil {
		if views, ok := s.runsInFlight(r, err, created); ok {
			writeJSON(w, http.StatusOK, views)
			return nil
		}
		return err
	}
	views, err := s.collectRunViews(r.Context(), d, db.RunFilter{SessionID: sess.SessionID, Limit: sessionRunsPage, SortBy: sortBy, SortOrder: order}, created)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, views)
	return nil
}

// runsInFlight answers GET /sessions/{id}/runs for a session that is not
// stored (notFound is loadSession's 404) while this process executes its
// first run: AgentOS stores a streamed run's session only when the run ends
// and answers 404 meanwhile, but a web client asks for the session's runs as
// soon as RunStarted names it. The answer is the executing run(s) as
// RUNNING, from the snapshot taken when they started; nothing is written
// for it. Another process serving the same database does not know the run
// and still answers 404.
func (s *Server) runsInFlight(r *http.Request, notFound error, created createdRange) ([]runView, bool) {
	var he *httpError
	if !errors.As(notFound, &he) || he.Status != http.StatusNotFound {
		return nil, false
	}
	typ, _ := sessionType(r, "")
	user := actAs(r.Context(), r.URL.Query().Get("user_id"))
	shown := s.runs.inSession(chi.URLParam(r, "session_id"), func(o *run.Output, owner string) bool {
		return user.owns(owner) && (typ == "" || o.Type() == typ) && created.holds(o.CreatedAt)
	})
	if len(shown) == 0 {
		return nil, false
	}
	views := make([]runView, 0, len(shown))
	for _, o := range shown {
		row, err := db.RunFromOutput(o)
		if err != nil {
			return nil, false
		}
		v, err := newRunView(row)
		if err != nil {
			return nil, false
		}
		views = append(views, v)
	}
	return views, true
}

// createdRange is the created_after and created_before bounds of GET
// /sessions/{id}/runs, in epoch seconds, both inclusive as in Agno; nil
// bounds nothing.
type createdRange struct {
	after, before *int64
}

// parseCreatedRange reads created_after and created_before: an integer
// (epoch seconds) each, else a 422, as FastAPI answers; empty is absent.
func parseCreatedRange(q url.Values) (createdRange, error) {
	var c createdRange
	for name, dst := range map[string]**int64{"created_after": &c.after, "created_before": &c.before} {
		if v := q.Get(name); v != "" {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return createdRange{}, errorf(http.StatusUnprocessableEntity, "%s must be an integer (epoch seconds)", name)
			}
			*dst = &n
		}
	}
	return c, nil
}

// holds reports whether a run created at sec (epoch seconds) is in range.
func (c createdRange) holds(sec int64) bool {
	return (c.after == nil || sec >= *c.after) && (c.before == nil || sec <= *c.before)
}

// collectRunViews reads the runs matching f page by page (f.Limit a page) into
// views, keeping those created in range, and stopping after the page that
// reaches maxSessionRuns. Runs the store cannot decode are left out (see
// leaveOutCorrupt).
func (s *Server) collectRunViews(ctx context.Context, d *db.DB, f db.RunFilter, created createdRange) ([]runView, error) {
	views := []runView{}
	err := s.eachRunPage(ctx, d, f, "list runs", func(rows []db.Run, _ int) (bool, error) {
		for i := range rows {
			if !created.holds(rows[i].CreatedAt) {
				continue
			}
			v, err := newRunView(&rows[i])
			if err != nil {
				return false, err
			}
			views = append(views, v)
		}
		return len(views) < maxSessionRuns, nil
	})
	if err != nil {
		return nil, err
	}
	return views, nil
}

// eachRunPage reads the runs matching f page by page (f.Limit a page, from
// page 1) and hands each page to fn with the number of rows the store left
// out of it as corrupt (logged as what; see leaveOutCorrupt), until the last
// page or until fn answers false.
func (s *Server) eachRunPage(ctx context.Context, d *db.DB, f db.RunFilter, what string, fn func(rows []db.Run, corrupt int) (bool, error)) error {
	for f.Page = 1; ; f.Page++ {
		rows, _, err := d.GetRuns(ctx, f)
		corrupt := corruptRows(err)
		if err = s.leaveOutCorrupt(ctx, what, err); err != nil {
			return err
		}
		more, err := fn(rows, corrupt)
		if err != nil || !more || len(rows)+corrupt < f.Limit {
			return err
		}
	}
}

// leaveOutCorrupt logs a list's rows that the store could not decode (rows
// another writer left corrupt: db.ErrCorruptRow, one *db.CorruptRowError
// each, joined), which the store left out of the page, and answers nil so
// that the page of the others is served; any other error is returned.
func (s *Server) leaveOutCorrupt(ctx context.Context, what string, err error) error {
	if err == nil || !errors.Is(err, db.ErrCorruptRow) {
		return err
	}
	s.log.WarnContext(ctx, what+": unreadable rows left out", "request_id", requestID(ctx), "err", err)
	return nil
}

// corruptRows counts the rows a list's error reports as left out.
func corruptRows(err error) int {
	if !errors.Is(err, db.ErrCorruptRow) {
		return 0
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		if _, one := err.(*db.CorruptRowError); !one {
			return len(j.Unwrap())
		}
	}
	return 1
}

func (s *Server) getSessionRun(w http.ResponseWriter, r *http.Request) error {
	d, sess, err := s.loadSession(r)
	if err != nil {
		return err
	}
	runID := chi.URLParam(r, "run_id")
	row, err := d.GetRun(r.Context(), runID)
	if errors.Is(err, db.ErrNotFound) || (err == nil && row.SessionID != sess.SessionID) {
		return &httpError{Status: http.StatusNotFound, Detail: "Run with ID " + runID + " not found"}
	}
	if err != nil {
		return err
	}
	v, err := newRunView(row)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, v)
	return nil
}
