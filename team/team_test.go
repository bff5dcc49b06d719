package team

import (
	"context"
	"encoding/json"
	"iter"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/sqlite"
	"github.com/agentryhq/agentry/model"
	"github.com/agentryhq/agentry/model/scripted"
	"github.com/agentryhq/agentry/run"
)

// recorder keeps the messages of every request a model receives.
type recorder struct {
	model.Model
	mu   sync.Mutex
	reqs [][]model.Message
}

func (r *recorder) Stream(ctx context.Context, req *model.Request) iter.Seq2[*model.Chunk, error] {
	r.mu.Lock()
	r.reqs = append(r.reqs, req.Collect())
	r.mu.Unlock()
	return r.Model.Stream(ctx, req)
}

func (r *recorder) requests() [][]model.Message {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([][]model.Message(nil), r.reqs...)
}

func openDB(t *testing.T) *db.DB {
	t.Helper()
	d, err := sqlite.Open(context.Background(), sqlite.Config{Path: filepath.Join(t.TempDir(), "agentry.db")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// leaderScript delegates to member on turn 1 and answers on turn 2.
func leaderScript(member string) *scripted.Model {
	return scripted.MustNew(scripted.Config{Turns: []scripted.Turn{
		{ToolCalls: []scripted.ToolCall{{Name: ToolDelegate, Args: map[string]any{"member_id": member, "task": "write a greeting"}}}},
		{Content: "The team says hello."},
	}})
}

type fixture struct {
	db             *db.DB
	team           *Team
	leader, member *recorder
}

func newFixture(t *testing.T) fixture {
	t.Helper()
	d := openDB(t)
	f := fixture{db: d, leader: &recorder{Model: leaderScript("writer")}, member: &recorder{Model: scripted.Reply("hello from the writer")}}
	w, err := agent.New(agent.Config{ID: "writer", Name: "Writer", Description: "Writes greetings.", Model: f.member, DB: d, AddHistoryToContext: true})
	if err != nil {
		t.Fatal(err)
	}
	f.team, err = New(Config{ID: "t1", Name: "Greeters", Model: f.leader, Members: []*agent.Agent{w}, DB: d, AddHistoryToContext: true})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func sessionRuns(t *testing.T, d *db.DB, sessionID string) []db.Run {
	t.Helper()
	rows, _, err := d.GetRuns(context.Background(), db.RunFilter{SessionID: sessionID, Limit: 100, Page: 1})
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

func TestRun_StoresOneTeamRunAndMemberRunsWithParent(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	out, err := f.team.Run(ctx, run.TextInput("greet me"), agent.WithSessionID("s1"), agent.WithUserID("u1"))
	if err != nil {
		t.Fatal(err)
	}
	if out.Status != run.StatusCompleted || out.Content != "The team says hello." || out.TeamID != "t1" || out.TeamName != "Greeters" || out.AgentID != "" {
		t.Fatalf("team run = %+v", out)
	}
	if len(out.MemberResponses) != 1 || !strings.Contains(string(out.MemberResponses[0]), "hello from the writer") {
		t.Errorf("member_responses = %s", out.MemberResponses)
	}
	if len(out.Tools) != 1 || out.Tools[0].ToolName != ToolDelegate || out.Tools[0].Result != "hello from the writer" {
		t.Errorf("tools = %+v", out.Tools)
	}
	rows := sessionRuns(t, f.db, "s1")
	if len(rows) != 2 {
		t.Fatalf("%d rows, want 2 (member + team)", len(rows))
	}
	var teamRow, memberRow *db.Run
	for i := range rows {
		switch rows[i].RunType {
		case run.TypeTeam:
			teamRow = &rows[i]
		case run.TypeAgent:
			memberRow = &rows[i]
		}
	}
	if teamRow == nil || memberRow == nil {
		t.Fatalf("rows = %+v", rows)
	}
	if teamRow.RunID != out.RunID || teamRow.TeamID != "t1" || teamRow.AgentID != "" || teamRow.ParentRunID != "" || teamRow.UserID != "u1" {
		t.Errorf("team row = %+v", teamRow)
	}
	if memberRow.AgentID != "writer" || memberRow.ParentRunID != out.RunID || memberRow.UserID != "u1" || memberRow.Status != run.StatusCompleted {
		t.Errorf("member row = %+v", memberRow)
	}
	stored, err := teamRow.Output()
	if err != nil || len(stored.MemberResponses) != 1 {
		t.Errorf("stored team run member_responses = %v, %v", stored, err)
	}
	s, err := f.db.GetSession(ctx, "s1")
	if err != nil || s.SessionType != run.TypeTeam || s.TeamID != "t1" || s.AgentID != "" || s.UserID != "u1" {
		t.Errorf("session = %+v, %v", s, err)
	}
}

func TestStream_LeaderEventsArePrefixedTeam(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	var evs []run.Event
	for ev, err := range f.team.Stream(context.Background(), run.TextInput("greet me")) {
		if err != nil {
			t.Fatal(err)
		}
		evs = append(evs, ev)
	}
	if len(evs) == 0 || evs[0].Event != "TeamRunStarted" || evs[len(evs)-1].Event != "TeamRunCompleted" {
		t.Fatalf("events = %v", evs)
	}
	seen := map[run.EventType]bool{}
	for _, ev := range evs {
		seen[ev.Event] = true
		if ev.ParentRunID != "" {
			continue // a forwarded member event (see TestStream_ForwardsMemberEvents)
		}
		if !strings.HasPrefix(string(ev.Event), "Team") || ev.TeamID != "t1" || ev.TeamName != "Greeters" || ev.AgentID != "" || ev.SessionID == "" {
			t.Errorf("event %+v", ev)
		}
	}
	for _, want := range []run.EventType{"TeamToolCallStarted", "TeamToolCallCompleted", "TeamRunContent"} {
		if !seen[want] {
			t.Errorf("no %s in %v", want, seen)
		}
	}
	if last := evs[len(evs)-1]; last.Content != "The team says hello." {
		t.Errorf("TeamRunCompleted content = %v", last.Content)
	}
}

func TestRun_LeaderHistorySkipsMemberRuns(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	for _, msg := range []string{"first", "second"} {
		if _, err := f.team.Run(ctx, run.TextInput(msg), agent.WithSessionID("s1")); err != nil {
			t.Fatal(err)
		}
	}
	reqs := f.leader.requests()
	if len(reqs) != 4 {
		t.Fatalf("%d leader requests, want 4", len(reqs))
	}
	var history []model.Message
	for _, m := range reqs[2] {
		if m.FromHistory {
			history = append(history, m)
		}
	}
	// The first team run's user, tool call, tool result and answer; nothing
	// of the member's own run.
	if len(history) != 4 || history[0].Content != "first" || history[3].Content != "The team says hello." {
		t.Errorf("history = %+v", history)
	}
	for _, m := range history {
		if m.Content == "write a greeting" {
			t.Errorf("member run in the leader's history: %+v", m)
		}
	}
	// The member (AddHistoryToContext) sees its own earlier member run, as
	// Agno's member history does, and none of the team's runs.
	mreqs := f.member.requests()
	if len(mreqs) != 2 {
		t.Fatalf("%d member requests, want 2", len(mreqs))
	}
	var mh []string
	for i, req := range mreqs {
		for _, m := range req {
			if m.FromHistory {
				if i == 0 {
					t.Errorf("member request 0 has history %+v", m)
				}
				mh = append(mh, string(m.Role)+": "+m.Content)
			}
		}
	}
	if want := []string{"user: write a greeting", "assistant: hello from the writer"}; !slices.Equal(mh, want) {
		t.Errorf("member history %q, want %q", mh, want)
	}
	if rows := sessionRuns(t, f.db, "s1"); len(rows) != 4 {
		t.Errorf("%d rows, want 4", len(rows))
	}
}

func TestRun_UnknownMemberIsAToolErrorTheLeaderReads(t *testing.T) {
	t.Parallel()
	d := openDB(t)
	w, _ := agent.New(agent.Config{ID: "writer", Model: scripted.Reply("x"), DB: d})
	tm, err := New(Config{Name: "Team One", Model: leaderScript("nobody"), Members: []*agent.Agent{w}, DB: d})
	if err != nil {
		t.Fatal(err)
	}
	if tm.ID() != "team-one" {
		t.Errorf("id = %q", tm.ID())
	}
	out, err := tm.Run(context.Background(), run.TextInput("go"))
	if err != nil || out.Status != run.StatusCompleted {
		t.Fatalf("run = %+v, %v", out, err)
	}
	if len(out.Tools) != 1 || !out.Tools[0].ToolCallError || !strings.Contains(out.Tools[0].Result, `no member with id "nobody"`) {
		t.Errorf("tools = %+v", out.Tools)
	}
	if len(out.MemberResponses) != 0 {
		t.Errorf("member_responses = %s", out.MemberResponses)
	}
}

func TestNew_RejectsBadConfigs(t *testing.T) {
	t.Parallel()
	a, _ := agent.New(agent.Config{ID: "a", Model: scripted.Reply("x")})
	tests := []struct {
		name string
		cfg  Config
		want string
	}{
		{"no model", Config{Members: []*agent.Agent{a}}, "Model is required"},
		{"no members", Config{Model: scripted.Reply("x")}, "needs at least one member"},
		{"nil member", Config{Model: scripted.Reply("x"), Members: []*agent.Agent{nil}}, "Members[0] is nil"},
		{"duplicate member", Config{Model: scripted.Reply("x"), Members: []*agent.Agent{a, a}}, "share id"},
	}
	for _, tc := range tests {
		if _, err := New(tc.cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want %q", tc.name, err, tc.want)
		}
	}
}

// ComponentData is the team_data a team run writes to its session's row, so
// a session created with it before the run (a background run's) is left
// as the run finds it.
func TestComponentData_IsWhatTheRunWritesAsTeamData(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	if _, err := f.team.Run(ctx, run.TextInput("greet me"), agent.WithSessionID("s1")); err != nil {
		t.Fatal(err)
	}
	s, err := f.db.GetSession(ctx, "s1")
	if err != nil {
		t.Fatal(err)
	}
	var got, want map[string]any
	if err := json.Unmarshal(s.TeamData, &got); err != nil {
		t.Fatalf("team_data %s: %v", s.TeamData, err)
	}
	if err := json.Unmarshal(f.team.ComponentData(), &want); err != nil {
		t.Fatalf("ComponentData %s: %v", f.team.ComponentData(), err)
	}
	if !reflect.DeepEqual(got, want) || want["team_id"] != "t1" {
		t.Errorf("team_data %s, ComponentData %s", s.TeamData, f.team.ComponentData())
	}
}
