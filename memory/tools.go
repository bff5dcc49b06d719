package memory

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/model"
	"github.com/agentryhq/agentry/run"
	"github.com/agentryhq/agentry/tool"
)

// Tool names, as Agno's.
const (
	UpdateToolName      = "update_user_memory"
	SearchSessionsTool  = "search_past_sessions"
	ReadSessionToolName = "read_past_session"
)

// Defaults of the past-session tools (Agno's).
const (
	DefaultPastSessions    = 20
	DefaultPastSessionRuns = 3
	// maxReadRuns bounds read_past_session when it is asked for all runs.
	maxReadRuns  = 100
	previewChars = 200
)

// Caller is whom a tool call acts for: the run's user, session and
// component. The agent supplies it from the run.
type Caller struct {
	UserID    string
	SessionID string
	Component run.Component
}

// CallerFunc returns the caller of a tool call.
type CallerFunc func(ctx context.Context) Caller

// UpdateTool is the agentic memory tool (enable_agentic_memory): the model
// describes a change and the manager applies it to the caller's memories.
func UpdateTool(m *Manager, caller CallerFunc) tool.Tool {
	type in struct {
		Task string `json:"task" jsonschema:"the change to make: what to remember, correct or forget about the user. Be specific."`
	}
	return tool.MustFunc(tool.FuncConfig{Name: UpdateToolName,
		Description: "Submit a task to add, update or delete memories about the user. Describe the task in detail and be specific."},
		func(ctx context.Context, args in) (string, error) {
			c := caller(ctx)
			t := Target{UserID: c.UserID}
			switch c.Component.Type {
			case run.TypeTeam:
				t.TeamID = c.Component.ID
			default:
				t.AgentID = c.Component.ID
			}
			res, err := m.Task(ctx, t, args.Task)
			if err != nil {
				if errors.Is(err, ErrNoUser) {
					return "", errors.New("memories are kept per user and this run has no user id: nothing was stored")
				}
				return "", err
			}
			return fmt.Sprintf("Memory updated: %d added, %d updated, %d deleted.", res.Added, res.Updated, res.Deleted), nil
		})
}

// PastSessions configures the past-session tools (search_past_sessions).
type PastSessions struct {
	DB *db.DB
	// Sessions is how many recent sessions search_past_sessions lists
	// (num_past_sessions_to_search); zero means DefaultPastSessions.
	Sessions int
	// Runs is how many runs of each session it previews
	// (num_past_session_runs_in_search); zero means DefaultPastSessionRuns.
	Runs int
}

// sessionPreview is one entry of search_past_sessions' answer (Agno's shape,
// plus the stored summary when there is one).
type sessionPreview struct {
	SessionID string       `json:"session_id"`
	CreatedAt string       `json:"created_at,omitempty"`
	Summary   string       `json:"summary,omitempty"`
	Runs      []runPreview `json:"runs"`
}

type runPreview struct {
	User      string `json:"user"`
	Assistant string `json:"assistant"`
}

// Tools returns search_past_sessions and read_past_session. Both read only
// the caller's own sessions of the caller's component; a run without a user
// id sees none.
func (p PastSessions) Tools(caller CallerFunc) []tool.Tool {
	if p.Sessions <= 0 {
		p.Sessions = DefaultPastSessions
	}
	if p.Runs <= 0 {
		p.Runs = DefaultPastSessionRuns
	}
	search := tool.MustFunc(tool.FuncConfig{Name: SearchSessionsTool,
		Description: "List previous chat sessions with the user, most recent first, with their summaries and short previews. Use " + ReadSessionToolName + " to read one in full."},
		func(ctx context.Context, _ struct{}) (json.RawMessage, error) {
			out, err := p.search(ctx, caller(ctx))
			if err != nil {
				return nil, err
			}
			return json.Marshal(out)
		})
	type readIn struct {
		SessionID string `json:"session_id" jsonschema:"the session to read (from search_past_sessions)"`
		NumRuns   int    `json:"num_runs,omitempty" jsonschema:"the number of most recent runs to include; default all (up to 100)"`
	}
	read := tool.MustFunc(tool.FuncConfig{Name: ReadSessionToolName,
		Description: "Read the conversation of a previous session. Use " + SearchSessionsTool + " first to find it."},
		func(ctx context.Context, in readIn) (string, error) {
			return p.read(ctx, caller(ctx), in.SessionID, in.NumRuns)
		})
	return []tool.Tool{search, read}
}

func (p PastSessions) search(ctx context.Context, c Caller) ([]sessionPreview, error) {
	out := []sessionPreview{}
	if c.UserID == "" || p.DB == nil {
		return out, nil
	}
	ctx = db.WithUserScope(ctx, c.UserID)
	// One more than asked for: the current session is left out.
	sessions, _, err := p.DB.ListSessions(ctx, db.SessionFilter{SessionType: c.Component.Type, ComponentID: c.Component.ID,
		UserID: c.UserID, Limit: p.Sessions + 1, Page: 1, SortBy: "created_at", SortOrder: db.Desc})
	if err = leaveOutCorrupt(ctx, "sessions", err); err != nil {
		return nil, err
	}
	for _, s := range sessions {
		if s.SessionID == c.SessionID || len(out) == p.Sessions {
			continue
		}
		runs, err := p.lastRuns(ctx, c, s.SessionID, p.Runs)
		if err != nil {
			return nil, err
		}
		sp := sessionPreview{SessionID: s.SessionID, Runs: []runPreview{}}
		if s.CreatedAt > 0 {
			sp.CreatedAt = time.Unix(s.CreatedAt, 0).UTC().Format(time.RFC3339)
		}
		if sum := DecodeSummary(s.Summary); sum != nil {
			sp.Summary = sum.Summary
		}
		for _, r := range runs {
			var rp runPreview
			for _, m := range r.Messages {
				text := strings.TrimSpace(messageText(&m))
				switch {
				case m.FromHistory || text == "":
				case m.Role == model.RoleUser && rp.User == "":
					rp.User = preview(text)
				case m.Role == model.RoleAssistant && rp.Assistant == "":
					rp.Assistant = preview(text)
				}
			}
			if rp.User != "" || rp.Assistant != "" {
				sp.Runs = append(sp.Runs, rp)
			}
		}
		if len(sp.Runs) > 0 || sp.Summary != "" {
			out = append(out, sp)
		}
	}
	return out, nil
}

// lastRuns returns the last n completed runs of the caller's component in a
// session, oldest first.
func (p PastSessions) lastRuns(ctx context.Context, c Caller, sessionID string, n int) ([]*run.Output, error) {
	f := db.RunFilter{SessionID: sessionID, UserID: c.UserID, Statuses: []run.Status{run.StatusCompleted},
		Limit: n, Page: 1, SortBy: "run_index", SortOrder: db.Desc}
	f.ProducedBy(c.Component)
	rows, _, err := p.DB.GetRuns(ctx, f)
	if err = leaveOutCorrupt(ctx, "runs", err); err != nil {
		return nil, err
	}
	out := make([]*run.Output, 0, len(rows))
	for i := range rows {
		if rows[i].ParentRunID != "" {
			continue
		}
		o, err := rows[i].Output()
		if err != nil {
			continue // a corrupt stored run must not hide the others
		}
		out = append(out, o)
	}
	slices.Reverse(out)
	return out, nil
}

func (p PastSessions) read(ctx context.Context, c Caller, sessionID string, numRuns int) (string, error) {
	const notFound = "Session not found."
	if c.UserID == "" || p.DB == nil || sessionID == "" {
		return notFound, nil
	}
	ctx = db.WithUserScope(ctx, c.UserID)
	s, err := p.DB.GetSession(ctx, sessionID)
	if errors.Is(err, db.ErrNotFound) {
		return notFound, nil
	}
	if err != nil {
		return "", err
	}
	if s.UserID != c.UserID || s.SessionType != c.Component.Type || !ownedBy(s, c.Component) {
		return notFound, nil
	}
	if numRuns <= 0 || numRuns > maxReadRuns {
		numRuns = maxReadRuns
	}
	runs, err := p.lastRuns(ctx, c, sessionID, numRuns)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Session: %s\n", s.SessionID)
	if s.CreatedAt > 0 {
		fmt.Fprintf(&b, "Created: %s\n", time.Unix(s.CreatedAt, 0).UTC().Format(time.RFC3339))
	}
	if sum := DecodeSummary(s.Summary); sum != nil {
		fmt.Fprintf(&b, "Summary: %s\n", sum.Summary)
	}
	b.WriteString("\n")
	n := 0
	for _, r := range runs {
		for _, m := range r.Messages {
			text := strings.TrimSpace(messageText(&m))
			if m.FromHistory || text == "" || (m.Role != model.RoleUser && m.Role != model.RoleAssistant) {
				continue
			}
			label := "User"
			if m.Role == model.RoleAssistant {
				label = "Assistant"
			}
			fmt.Fprintf(&b, "%s: %s\n\n", label, text)
			n++
		}
	}
	if n == 0 {
		return "No messages found in session.", nil
	}
	return strings.TrimSpace(b.String()), nil
}

func ownedBy(s *db.Session, c run.Component) bool {
	switch c.Type {
	case run.TypeTeam:
		return s.TeamID == c.ID
	case run.TypeWorkflow:
		return s.WorkflowID == c.ID
	}
	return s.AgentID == c.ID
}

func preview(s string) string {
	if len(s) <= previewChars {
		return s
	}
	return truncate(s, previewChars) + "..."
}
