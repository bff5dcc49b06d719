package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/memory"
	"github.com/agentryhq/agentry/model/scripted"
	"github.com/agentryhq/agentry/run"
	"github.com/agentryhq/agentry/tool"
)

// TestComponent_StampsRunsSessionsAndEvents: the identity an agent is given
// (its own by default, a team's when a team composes it as its leader) is
// what its streamed and stored events, its run row and its session carry.
func TestComponent_StampsRunsSessionsAndEvents(t *testing.T) {
	t.Parallel()
	hook := func(_ context.Context, out *run.Output) {
		out.MemberResponses = []json.RawMessage{json.RawMessage(`{"run_id":"m1"}`)}
	}
	tests := []struct {
		name        string
		cfg         Config
		want        run.Component
		first, last run.EventType
		dataKey     string
		members     int
	}{
		{"agent by default", Config{ID: "a1", Name: "Writer"}, run.Component{Type: run.TypeAgent, ID: "a1", Name: "Writer"},
			"RunStarted", "RunCompleted", "agent_id", 0},
		{"team leader", Config{Component: run.Component{Type: run.TypeTeam, ID: "t1", Name: "Team"}, BeforeStore: hook},
			run.Component{Type: run.TypeTeam, ID: "t1", Name: "Team"}, "TeamRunStarted", "TeamRunCompleted", "team_id", 1},
		{"component id defaulted from its name", Config{Component: run.Component{Type: run.TypeTeam, Name: "Red Team"}},
			run.Component{Type: run.TypeTeam, ID: "red-team", Name: "Red Team"}, "TeamRunStarted", "TeamRunCompleted", "team_id", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			store := db.New("", memory.New())
			cfg := tt.cfg
			cfg.Model, cfg.DB, cfg.StoreEvents = scripted.Reply("done"), store, true
			a := mustAgent(t, cfg)
			if a.Component() != tt.want || a.ID() != tt.want.ID || a.Name() != tt.want.Name {
				t.Errorf("component = %+v, id %q, name %q", a.Component(), a.ID(), a.Name())
			}
			evs := collect(t, a.Stream(ctx, run.TextInput("hi"), WithSessionID("s")))
			if evs[0].Event != tt.first || evs[len(evs)-1].Event != tt.last {
				t.Fatalf("events = %v", names(evs))
			}
			rows, _, err := store.GetRuns(ctx, db.RunFilter{SessionID: "s", Limit: 10, Page: 1})
			if err != nil || len(rows) != 1 {
				t.Fatalf("rows = %v, %v", rows, err)
			}
			r := rows[0]
			out, _ := r.Output()
			for _, e := range append(evs, out.Events...) {
				if want := tt.want.Event(""); e.AgentID != want.AgentID || e.AgentName != want.AgentName || e.TeamID != want.TeamID || e.TeamName != want.TeamName {
					t.Errorf("event %+v", e)
				}
			}
			for _, e := range out.Events {
				if e.Event == tt.want.EventName(run.EventRunContent) {
					t.Errorf("a content delta was stored: %+v", e)
				}
			}
			if len(out.Events) == 0 || out.Events[0].Event != tt.first {
				t.Errorf("stored events = %v", names(out.Events))
			}
			if !r.ProducedBy(tt.want) || r.RunType != tt.want.Type || len(out.MemberResponses) != tt.members {
				t.Errorf("row = %+v, output = %+v", r, out)
			}
			if got := (run.Component{Type: out.Type(), ID: out.AgentID + out.TeamID + out.WorkflowID, Name: out.AgentName + out.TeamName + out.WorkflowName}); got != tt.want {
				t.Errorf("run stamped %+v", got)
			}
			s, err := store.GetSession(ctx, "s")
			if err != nil || s.SessionType != tt.want.Type {
				t.Fatalf("session = %+v, %v", s, err)
			}
			data := map[string]json.RawMessage{"agent_id": s.AgentData, "team_id": s.TeamData}[tt.dataKey]
			var m map[string]any
			if err := json.Unmarshal(data, &m); err != nil || m[tt.dataKey] != tt.want.ID || m["name"] != tt.want.Name {
				t.Errorf("session data %s = %s (agent_data %s, team_data %s)", tt.dataKey, data, s.AgentData, s.TeamData)
			}
			if ids := s.AgentID + "|" + s.TeamID; ids != map[string]string{"agent_id": tt.want.ID + "|", "team_id": "|" + tt.want.ID}[tt.dataKey] {
				t.Errorf("session ids agent|team = %s", ids)
			}
		})
	}
}

func TestNew_RefusesAComponentWithIDOrNameOrAnUnknownType(t *testing.T) {
	t.Parallel()
	for _, cfg := range []Config{
		{ID: "a", Component: run.Component{Type: run.TypeTeam, ID: "t"}},
		{Name: "A", Component: run.Component{Type: run.TypeTeam, ID: "t"}},
	} {
		cfg.Model = scripted.Reply("x")
		if _, err := New(cfg); err == nil {
			t.Errorf("New(%+v) accepted", cfg.Component)
		}
	}
	if _, err := New(Config{Model: scripted.Reply("x"), Component: run.Component{Type: "squad", ID: "t"}}); !errors.Is(err, run.ErrInvalidComponent) {
		t.Errorf("unknown type: %v", err)
	}
}

func TestParentRunID_LeavesAnExistingSessionToItsOwner(t *testing.T) {
	t.Parallel()
	store := db.New("", memory.New())
	ctx := context.Background()
	if _, err := store.UpsertSession(ctx, &db.Session{SessionID: "s", SessionType: run.TypeTeam, TeamID: "t1"}); err != nil {
		t.Fatal(err)
	}
	a := mustAgent(t, Config{ID: "member", Model: scripted.Reply("ok"), DB: store})
	if _, err := a.Run(ctx, run.TextInput("task"), WithSessionID("s"), WithParentRunID("team-run")); err != nil {
		t.Fatal(err)
	}
	s, err := store.GetSession(ctx, "s")
	if err != nil || s.SessionType != run.TypeTeam || s.TeamID != "t1" || s.AgentID != "" {
		t.Errorf("session = %+v, %v", s, err)
	}
	// A member run in a new session still creates it: its row references it.
	if _, err := a.Run(ctx, run.TextInput("task"), WithSessionID("new"), WithParentRunID("team-run")); err != nil {
		t.Fatal(err)
	}
	if _, err := store.GetSession(ctx, "new"); err != nil {
		t.Errorf("new session: %v", err)
	}
}

func TestResolveOptions_ReturnsWhatTheOptionsSet(t *testing.T) {
	t.Parallel()
	o := ResolveOptions(WithSessionID("s"), WithUserID("u"), WithRunID("r"), WithParentRunID("p"), WithMetadata(map[string]any{"k": 1}))
	if o.SessionID != "s" || o.UserID != "u" || o.RunID != "r" || o.ParentRunID != "p" || o.Metadata["k"] != 1 {
		t.Errorf("options = %+v", o)
	}
}

// TestComponent_DebugTraceUsesTheComponentsEventNames: a team leader's debug
// trace (streamed, so content deltas exist) shows its tool results and the
// messages of its first model request under the team's event names, and no
// deltas.
func TestComponent_DebugTraceUsesTheComponentsEventNames(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	m := scripted.MustNew(scripted.Config{Turns: []scripted.Turn{
		{ToolCalls: []scripted.ToolCall{{Name: "add", Args: map[string]int{"a": 2, "b": 2}}}}, {Content: "four"},
	}})
	a := mustAgent(t, Config{Component: run.Component{Type: run.TypeTeam, ID: "crew"}, Model: m, Tools: []tool.Tool{addTool()},
		Instructions: Instructions{"Be brief."}, DebugMode: true, DebugWriter: &buf})
	evs := collect(t, a.Stream(t.Context(), run.TextInput("2+2?")))
	if evs[len(evs)-1].Event != "TeamRunCompleted" {
		t.Fatalf("events %v", names(evs))
	}
	s := buf.String()
	for _, want := range []string{"TeamRunStarted", "DEBUG   user: 2+2?", `TeamToolCallCompleted add({"a":2,"b":2}) -> 4`, "TeamRunCompleted four"} {
		if !strings.Contains(s, want) {
			t.Fatalf("trace lacks %q:\n%s", want, s)
		}
	}
	if strings.Contains(s, "RunContent ") || strings.Contains(s, `TeamToolCallStarted add({"a":2,"b":2}) ->`) {
		t.Fatalf("trace has content deltas or a result on a started call:\n%s", s)
	}
}
