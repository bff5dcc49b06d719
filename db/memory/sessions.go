package memory

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/run"
)

// UpsertSession inserts a session, or updates it where the stored user_id is
// empty or the writer's; otherwise ErrNotFound. created_at is kept on update.
func (d *Driver) UpsertSession(ctx context.Context, in *db.Session) (*db.Session, error) {
	s, err := sessionToStore(ctx, in, false)
	if err != nil {
		return nil, err
	}
	unlock, err := d.write(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	old, err := d.sessionWritable(s)
	if err != nil {
		return nil, err
	}
	return d.putSession(s, old).Clone(), nil
}

// sessionToStore checks a session and returns the copy to store (in itself
// when keep: a row handed over, db.RunKeeper), written as the context's user;
// its JSON columns are copied either way.
func sessionToStore(ctx context.Context, in *db.Session, keep bool) (*db.Session, error) {
	if in == nil || in.SessionID == "" {
		return nil, fmt.Errorf("%w: session_id is required", db.ErrInvalidRecord)
	}
	s := in // kept: a row handed over (db.RunKeeper)
	if !keep {
		cp := *in // the JSON columns are checked and copied below
		s = &cp
	}
	s.UserID = writer(ctx, in.UserID)
	for _, c := range []struct {
		name string
		col  *json.RawMessage
	}{{"session_data", &s.SessionData}, {"agent_data", &s.AgentData}, {"team_data", &s.TeamData},
		{"workflow_data", &s.WorkflowData}, {"metadata", &s.Metadata}, {"summary", &s.Summary}} {
		v, err := jsonColumn("session", s.SessionID, c.name, *c.col)
		if err != nil {
			return nil, err
		}
		*c.col = v
	}
	return s, nil
}

// sessionWritable reports ErrNotFound when s would overwrite another user's
// session, and ErrSessionChanged when the stored row is not the one s
// expects (db.Session.Expect). The caller holds the write lock. It returns the stored session s
// replaces (nil: s is new) for putSession.
func (d *Driver) sessionWritable(s *db.Session) (*db.Session, error) {
	old := d.sessions[s.SessionID]
	if old != nil && !writable(old.UserID, s.UserID) {
		return nil, fmt.Errorf("%w: session %s belongs to another user", db.ErrNotFound, s.SessionID)
	}
	var stored json.RawMessage
	if old != nil {
		stored = old.SessionData
	}
	if !s.Expect.Matches(old != nil, stored) {
		return nil, fmt.Errorf("%w: session %s", db.ErrSessionChanged, s.SessionID)
	}
	return old, nil
}

// putSession stores s (created_at kept on update) and returns it: the
// stored value, which callers copy unless theirs only reads it
// (db.RunKeeper). The caller holds the write lock and checked
// sessionWritable, which found old (nil: s is new).
func (d *Driver) putSession(s, old *db.Session) *db.Session {
	s.Expect = db.SessionExpect{} // a condition of the write, not of the row
	if old != nil {
		s.CreatedAt = old.CreatedAt
	}
	d.sessions[s.SessionID] = s
	return s
}

// GetSession returns a session in scope or ErrNotFound.
func (d *Driver) GetSession(ctx context.Context, sessionID string) (*db.Session, error) {
	unlock, err := d.read(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	s, ok := d.sessions[sessionID]
	if !ok || !visible(ctx, s.UserID) {
		return nil, fmt.Errorf("%w: session %s", db.ErrNotFound, sessionID)
	}
	return s.Clone(), nil
}

// ListSessions returns one page of sessions in scope and the total count.
func (d *Driver) ListSessions(ctx context.Context, f db.SessionFilter) ([]db.Session, int, error) {
	unlock, err := d.read(ctx)
	if err != nil {
		return nil, 0, err
	}
	defer unlock()
	name := strings.ToLower(f.SessionName)
	var match []*db.Session
	for _, s := range d.sessions {
		switch {
		case !visible(ctx, s.UserID),
			f.SessionType != "" && s.SessionType != f.SessionType,
			f.UserID != "" && s.UserID != f.UserID,
			f.ComponentID != "" && !hasComponent(s, f.SessionType, f.ComponentID),
			name != "" && !strings.Contains(strings.ToLower(sessionName(s)), name):
			continue
		}
		match = append(match, s)
	}
	byUpdated := f.SortBy == "updated_at"
	slices.SortFunc(match, func(a, b *db.Session) int {
		c := cmp.Compare(a.CreatedAt, b.CreatedAt)
		if byUpdated {
			c = cmp.Compare(a.UpdatedAt, b.UpdatedAt)
		}
		return cmpDir(cmp.Or(c, cmp.Compare(a.SessionID, b.SessionID)), f.SortOrder)
	})
	out := []db.Session{}
	for _, s := range page(match, f.Limit, f.Page) {
		out = append(out, *s.Clone())
	}
	return out, len(match), nil
}

func hasComponent(s *db.Session, t run.Type, id string) bool {
	switch t {
	case run.TypeAgent:
		return s.AgentID == id
	case run.TypeTeam:
		return s.TeamID == id
	case run.TypeWorkflow:
		return s.WorkflowID == id
	}
	return s.AgentID == id || s.TeamID == id || s.WorkflowID == id
}

func sessionName(s *db.Session) string {
	if len(s.SessionData) == 0 {
		return ""
	}
	var sd struct {
		SessionName any `json:"session_name"`
	}
	if json.Unmarshal(s.SessionData, &sd) != nil {
		return ""
	}
	if n, ok := sd.SessionName.(string); ok {
		return n
	}
	return ""
}

// DeleteSessions deletes sessions in scope, their runs with their step
// journals and approvals, their traces (with their spans) and their
// offloaded tool results (index rows and the files they point at), and
// takes out of their schedule runs what those hold of them, as the SQL
// store does (sqlstore's deleteSessionsTx); other ids are ignored.
func (d *Driver) DeleteSessions(ctx context.Context, sessionIDs ...string) error {
	unlock, err := d.write(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	deleted := map[string]bool{}
	runs := map[string]bool{}
	for _, id := range sessionIDs {
		s, ok := d.sessions[id]
		if !ok || !visible(ctx, s.UserID) {
			continue
		}
		delete(d.sessions, id)
		if sr := d.sessionRuns[id]; sr != nil {
			for _, r := range sr.order {
				delete(d.runs, r.RunID)
				delete(d.journal, r.RunID)
				runs[r.RunID] = true
			}
		}
		delete(d.sessionRuns, id)
		for tid, t := range d.tr.traces {
			if t.SessionID == id {
				d.tr.dropTrace(tid)
			}
		}
		deleted[id] = true
	}
	if len(deleted) == 0 {
		return nil
	}
	for rid, r := range d.toolResults {
		if r.SessionID != "" && deleted[r.SessionID] {
			delete(d.files, fileKey{r.Namespace, r.Path})
			delete(d.toolResults, rid)
		}
	}
	for aid, a := range d.approvals {
		if deleted[a.SessionID] || runs[a.RunID] {
			delete(d.approvals, aid)
		}
	}
	now := time.Now().Unix()
	for rid, r := range d.control.scheduleRuns {
		if !(r.SessionID != "" && deleted[r.SessionID]) && !(r.RunID != "" && runs[r.RunID]) {
			continue
		}
		cp := cloneScheduleRun(r)
		cp.RunID, cp.SessionID, cp.Input, cp.Output, cp.Requirements = "", "", nil, nil, nil
		if cp.Status == db.ScheduleRunRunning || cp.Status == db.ScheduleRunPaused {
			cp.Status, cp.Error = db.ScheduleRunFailed, db.ScheduleRunSessionDeleted
			if cp.CompletedAt == 0 {
				cp.CompletedAt = now
			}
		}
		d.control.scheduleRuns[rid] = cp
	}
	return nil
}
