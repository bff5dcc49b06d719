package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/run"
	"github.com/agentryhq/agentry/tool"
	"github.com/agentryhq/agentry/workflow"
)

// runComponent runs an agent, team or workflow to its end, reporting tool
// calls (and workflow steps) as progress. The call's context is the run's:
// a client cancelling the request cancels the run, which is stored CANCELLED.
func (s *Server) runComponent(ctx context.Context, req *mcp.CallToolRequest, kind string, in runIn) (*mcp.CallToolResult, any, error) {
	_, id, err := pick(in.AgentID, in.TeamID, in.WorkflowID)
	if err != nil {
		return nil, nil, err
	}
	c, err := s.begin(ctx, req)
	if err != nil {
		return nil, nil, err
	}
	if err := s.authorize(c, kind, id, "run"); err != nil {
		return nil, nil, err
	}
	t, err := s.lookup(kind, id)
	if err != nil {
		return nil, nil, err
	}
	if err := checkMessage(in.Message); err != nil {
		return nil, nil, err
	}
	userID := callerUser(c, in.UserID)
	sessionID := in.SessionID
	session := agent.WithSessionID(sessionID)
	if sessionID == "" {
		sessionID = uuid.NewString()
		session = agent.WithNewSession(sessionID)
	} else if err := checkSessionOwner(c.ctx, t, sessionID, userID); err != nil {
		return nil, nil, err
	}
	runID := uuid.NewString()
	runCtx := c.ctx
	if s.cfg.Begin != nil {
		var end func()
		if runCtx, end, err = s.cfg.Begin(runCtx, t, runID, userID); err != nil {
			return nil, nil, shown(err)
		}
		defer end()
	}
	label := strings.TrimSuffix(kind, "s")
	var total float64
	if w, ok := t.(*workflow.Workflow); ok {
		total = float64(len(w.Steps()))
	}
	c.progress(0, total, fmt.Sprintf("%s %s started", label, t.ID()))
	out := &run.Output{RunID: runID, SessionID: sessionID, Status: run.StatusRunning}
	ticks := 0.0
	var runner Streamer = t
	if s.cfg.Observe != nil {
		runner = s.cfg.Observe(t, runID, sessionID, userID)
	}
	for ev, err := range runner.Stream(runCtx, run.Input{InputContent: in.Message}, agent.WithRunID(runID), session, agent.WithUserID(userID)) {
		if err != nil {
			if errors.Is(err, agent.ErrStorage) && out.Status != run.StatusRunning {
				break
			}
			return nil, nil, err
		}
		name := string(ev.Event)
		switch {
		case strings.HasSuffix(name, string(run.EventToolCallStarted)), strings.HasSuffix(name, string(run.EventToolCallCompleted)):
			if total == 0 {
				ticks++
				verb := "started"
				if strings.HasSuffix(name, "Completed") {
					verb = "completed"
				}
				tn := "tool"
				if ev.Tool != nil && ev.Tool.ToolName != "" {
					tn = ev.Tool.ToolName
				}
				c.progress(ticks, 0, fmt.Sprintf("Tool call %s: %s", verb, tn))
			}
		case ev.Event == run.EventStepCompleted:
			ticks++
			c.progress(ticks, total, fmt.Sprintf("Step %s completed", ev.StepName))
		case ev.Event == run.EventStepStarted:
			c.progress(ticks, total, fmt.Sprintf("Step %s started", ev.StepName))
		}
		if st, ok := terminal(ev, t, runID); ok {
			out.Status = st
			out.Content = ev.Content
			if st == run.StatusPaused {
				out.Tools = ev.Tools
			}
		}
	}
	// The stored run is the answer (read even if the client went away).
	if d := t.DB(); d != nil {
		if row, err := d.GetRun(context.WithoutCancel(c.ctx), runID); err == nil {
			if stored, err := row.Output(); err == nil {
				out = stored
			}
		}
	}
	return s.runResult(ctx, "run_"+strings.TrimSuffix(kind, "s"), out, nil)
}

// callerUser is the user a call runs (or continues) a run for: the scoped
// user; else an authenticated caller's own, an admin's too, whatever
// user_id the arguments name (as Agno's MCP server binds user_id to the
// token's subject, and as agentos's run routes do: docs/adr/token-user-runs.md);
// else, for an unauthenticated caller, the one the arguments name.
func callerUser(c *call, named string) string {
	if u, ok := db.UserScope(c.ctx); ok {
		return u
	}
	if c.p != nil && c.p.UserID != "" {
		return c.p.UserID
	}
	return named
}

// terminal maps a run's last event to its status: an event of the run
// itself (not of a step's run inside a workflow) named as the target's
// component names the end of a run.
func terminal(ev run.Event, t Target, runID string) (run.Status, bool) {
	if ev.RunID != runID {
		return "", false
	}
	c := t.Component()
	for _, e := range []struct {
		name   run.EventType
		status run.Status
	}{
		{run.EventRunCompleted, run.StatusCompleted}, {run.EventRunError, run.StatusError},
		{run.EventRunCancelled, run.StatusCancelled}, {run.EventRunPaused, run.StatusPaused},
	} {
		if ev.Event == c.EventName(e.name) {
			return e.status, true
		}
	}
	return "", false
}

// runResult answers a finished run in the configured result mode. A failed
// or cancelled run is a tool error carrying the run's own message.
func (s *Server) runResult(ctx context.Context, toolName string, out *run.Output, runErr error) (*mcp.CallToolResult, any, error) {
	text := out.ContentString()
	switch out.Status {
	case run.StatusError:
		if text == "" && runErr != nil {
			text = s.clientError(ctx, toolName, runErr).Error()
		}
		if text == "" {
			text = "the run failed"
		}
		return nil, nil, shown(fmt.Errorf("run %s failed: %s", out.RunID, text))
	case run.StatusCancelled:
		return nil, nil, shown(fmt.Errorf("run %s was cancelled", out.RunID))
	}
	if runErr != nil && !errors.Is(runErr, agent.ErrStorage) {
		return nil, nil, runErr
	}
	if text == "" && out.Status == run.StatusPaused {
		text = fmt.Sprintf("Run paused: %d requirement(s) awaiting resolution.", len(out.Requirements))
	}
	if s.cfg.Options.ResultMode == ResultFull {
		raw, err := json.Marshal(out)
		if err != nil {
			return nil, nil, fmt.Errorf("encoding the run: %w", err)
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}, StructuredContent: json.RawMessage(raw)}, nil, nil
	}
	text = s.capText(text)
	structured := map[string]any{"run_id": out.RunID, "session_id": out.SessionID, "status": out.Status}
	if out.Status == run.StatusPaused {
		structured["requirements"] = out.Requirements
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}, StructuredContent: structured}, nil, nil
}

// capText bounds a trimmed text, saying where the rest is.
func (s *Server) capText(text string) string {
	cut, truncated := tool.Truncate(text, s.cfg.Options.MaxResultBytes)
	if !truncated {
		return text
	}
	return cut + fmt.Sprintf("\n[truncated: %d of %d bytes shown; get_session_runs with run_id returns the whole run]", len(cut), len(text))
}

// checkSessionOwner refuses a run in a session that belongs to another user
// before it starts: for a user-scoped caller such a session does not exist.
func checkSessionOwner(ctx context.Context, t Target, sessionID, userID string) error {
	d := t.DB()
	if d == nil {
		return nil
	}
	sess, err := d.GetSession(ctx, sessionID)
	switch {
	case err == nil:
		if _, scoped := db.UserScope(ctx); !scoped && userID != "" && sess.UserID != "" && sess.UserID != userID {
			return fmt.Errorf("%w: session %s belongs to another user", ErrInvalidInput, sessionID)
		}
		return nil
	case !errors.Is(err, db.ErrNotFound):
		return err
	}
	if _, scoped := db.UserScope(ctx); !scoped {
		return nil
	}
	// Missing for this user: a new session unless it exists for someone else
	// (the unscoped probe learns existence only; db bounds it by its timeout).
	if _, err := d.GetSession(context.Background(), sessionID); errors.Is(err, db.ErrNotFound) {
		return nil
	}
	return fmt.Errorf("%w: session %s", ErrNotFound, sessionID)
}

func notFound(err error, format string, args ...any) error {
	if errors.Is(err, db.ErrNotFound) {
		return fmt.Errorf("%w: "+format, append([]any{ErrNotFound}, args...)...)
	}
	return err
}

// database resolves db_id ("" is the default database).
func (s *Server) database(id string) (*db.DB, error) {
	if id == "" {
		if len(s.dbs) == 0 {
			return nil, fmt.Errorf("%w: no database is configured", ErrNotFound)
		}
		return s.dbs[0], nil
	}
	d, ok := s.dbByID[id]
	if !ok {
		return nil, fmt.Errorf("%w: database %q", ErrNotFound, id)
	}
	return d, nil
}

func isoTime(sec int64) string {
	if sec == 0 {
		return ""
	}
	return time.Unix(sec, 0).UTC().Format(time.RFC3339)
}

func (s *Server) getSessions(ctx context.Context, req *mcp.CallToolRequest, in sessionsIn) (*mcp.CallToolResult, any, error) {
	c, err := s.begin(ctx, req)
	if err != nil {
		return nil, nil, err
	}
	if err := s.authorize(c, "sessions", "", "read"); err != nil {
		return nil, nil, err
	}
	if err := checkSessionType(in.SessionType); err != nil {
		return nil, nil, err
	}
	d, err := s.database(in.DBID)
	if err != nil {
		return nil, nil, err
	}
	f := db.SessionFilter{SessionType: run.Type(in.SessionType), ComponentID: in.ComponentID, UserID: in.UserID,
		SessionName: in.SessionName, Limit: in.Limit, Page: in.Page, SortBy: in.SortBy, SortOrder: in.SortOrder}
	if f.SessionType == "" {
		f.SessionType = run.TypeAgent
	}
	if err := pageDefaults(&f.Limit, &f.Page, &f.SortOrder); err != nil {
		return nil, nil, err
	}
	sessions, total, err := d.ListSessions(c.ctx, f)
	if err != nil {
		return nil, nil, err
	}
	data := make([]map[string]any, 0, len(sessions))
	for _, ss := range sessions {
		// The state is passed on as stored: decoded, a number float64
		// cannot hold would be rounded, or (beyond float64's range) make
		// the whole session_data unreadable, its name included.
		var sd struct {
			SessionName  string                     `json:"session_name"`
			SessionState map[string]json.RawMessage `json:"session_state"`
		}
		_ = json.Unmarshal(ss.SessionData, &sd)
		row := map[string]any{"session_id": ss.SessionID, "session_type": ss.SessionType, "created_at": isoTime(ss.CreatedAt),
			"updated_at": isoTime(ss.UpdatedAt)}
		for k, v := range map[string]string{"session_name": sd.SessionName, "user_id": ss.UserID, "agent_id": ss.AgentID,
			"team_id": ss.TeamID, "workflow_id": ss.WorkflowID} {
			if v != "" {
				row[k] = v
			}
		}
		if len(sd.SessionState) > 0 {
			row["session_state"] = sd.SessionState
		}
		data = append(data, row)
	}
	return nil, map[string]any{"data": data, "meta": pageMeta(f.Page, f.Limit, total)}, nil
}

// maxPageLimit bounds a list tool's page, as the HTTP routes' limit.
const maxPageLimit = 1000

// pageDefaults checks a list tool's paging and fills what was omitted (0):
// 20 a page, page 1, newest first.
func pageDefaults(limit, page *int, order *string) error {
	if *limit < 0 || *limit > maxPageLimit {
		return fmt.Errorf("%w: limit must be from 1 to %d (omit it for 20)", ErrInvalidInput, maxPageLimit)
	}
	if *page < 0 {
		return fmt.Errorf("%w: page must be 1 or more", ErrInvalidInput)
	}
	if *limit == 0 {
		*limit = 20
	}
	if *page == 0 {
		*page = 1
	}
	if *order == "" {
		*order = "desc"
	}
	return nil
}

// pageMeta is a list tool's meta, as the HTTP API's paginated answers.
func pageMeta(page, limit, total int) map[string]any {
	return map[string]any{"page": page, "limit": limit, "total_count": total, "total_pages": (total + limit - 1) / limit}
}

// getMemories lists memories in the caller's scope, shaped as the HTTP
// API's GET /memories page.
func (s *Server) getMemories(ctx context.Context, req *mcp.CallToolRequest, in memoriesIn) (*mcp.CallToolResult, any, error) {
	c, err := s.begin(ctx, req)
	if err != nil {
		return nil, nil, err
	}
	if err := s.authorize(c, "memories", "", "read"); err != nil {
		return nil, nil, err
	}
	d, err := s.database(in.DBID)
	if err != nil {
		return nil, nil, err
	}
	f := db.MemoryFilter{UserID: in.UserID, AgentID: in.AgentID, TeamID: in.TeamID, Topics: in.Topics,
		SearchContent: in.SearchContent, Limit: in.Limit, Page: in.Page, SortBy: in.SortBy, SortOrder: in.SortOrder}
	if err := pageDefaults(&f.Limit, &f.Page, &f.SortOrder); err != nil {
		return nil, nil, err
	}
	mems, total, err := d.ListMemories(c.ctx, f)
	if err != nil {
		return nil, nil, err
	}
	data := make([]map[string]any, 0, len(mems))
	for _, m := range mems {
		topics := m.Topics
		if topics == nil {
			topics = []string{}
		}
		row := map[string]any{"memory_id": m.MemoryID, "memory": m.Memory, "topics": topics, "updated_at": isoTime(m.UpdatedAt)}
		for k, v := range map[string]string{"user_id": m.UserID, "agent_id": m.AgentID, "team_id": m.TeamID} {
			if v != "" {
				row[k] = v
			}
		}
		data = append(data, row)
	}
	return nil, map[string]any{"data": data, "meta": pageMeta(f.Page, f.Limit, total)}, nil
}

// maxHistoryRuns bounds get_session_runs (the newest are kept).
const maxHistoryRuns = 200

func (s *Server) getSessionRuns(ctx context.Context, req *mcp.CallToolRequest, in sessionRunsIn) (*mcp.CallToolResult, any, error) {
	c, err := s.begin(ctx, req)
	if err != nil {
		return nil, nil, err
	}
	if err := s.authorize(c, "sessions", in.SessionID, "read"); err != nil {
		return nil, nil, err
	}
	if err := checkSessionType(in.SessionType); err != nil {
		return nil, nil, err
	}
	d, err := s.database(in.DBID)
	if err != nil {
		return nil, nil, err
	}
	sess, err := d.GetSession(c.ctx, in.SessionID)
	if err != nil {
		return nil, nil, notFound(err, "session %s", in.SessionID)
	}
	if _, scoped := db.UserScope(c.ctx); !scoped && in.UserID != "" && sess.UserID != in.UserID {
		return nil, nil, fmt.Errorf("%w: session %s for user %s", ErrNotFound, in.SessionID, in.UserID)
	}
	if in.RunID != "" {
		row, err := d.GetRun(c.ctx, in.RunID)
		if err != nil || row.SessionID != in.SessionID {
			return nil, nil, fmt.Errorf("%w: run %s in session %s", ErrNotFound, in.RunID, in.SessionID)
		}
		return nil, map[string]any{"result": []json.RawMessage{row.RunData}}, nil
	}
	rows, _, err := d.GetRuns(c.ctx, db.RunFilter{SessionID: in.SessionID, RunType: run.Type(in.SessionType), Limit: maxHistoryRuns,
		Page: 1, SortOrder: "desc"})
	if err != nil {
		return nil, nil, err
	}
	out := make([]map[string]any, 0, len(rows))
	for i := len(rows) - 1; i >= 0; i-- {
		r := rows[i]
		o, err := r.Output()
		if err != nil {
			continue
		}
		item := map[string]any{"run_id": r.RunID, "status": r.Status, "created_at": isoTime(r.CreatedAt)}
		if o.Input != nil && o.Input.InputContent != nil {
			item["run_input"] = o.Input.InputContent
		}
		if txt := o.ContentString(); txt != "" {
			item["content"] = s.capText(txt)
		}
		for k, v := range map[string]string{"agent_id": r.AgentID, "team_id": r.TeamID, "workflow_id": r.WorkflowID} {
			if v != "" {
				item[k] = v
			}
		}
		out = append(out, item)
	}
	return nil, map[string]any{"result": out}, nil
}
