package team

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/embedder/local"
	"github.com/agentryhq/agentry/knowledge"
	"github.com/agentryhq/agentry/model"
	"github.com/agentryhq/agentry/model/scripted"
	"github.com/agentryhq/agentry/run"
	"github.com/agentryhq/agentry/vectordb/embedded"
)

// taggedKnowledge holds three shared documents tagged by planet and language.
func taggedKnowledge(t *testing.T, d *db.DB) *knowledge.Knowledge {
	t.Helper()
	e := local.New(local.Config{Dimensions: 64})
	vs, err := embedded.Open(context.Background(), embedded.Config{Path: filepath.Join(t.TempDir(), "v.db"), Dimensions: 64, EmbedderID: e.ID()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { vs.Close() })
	k, err := knowledge.New(knowledge.Config{Name: "kb", DB: d, Vectors: vs, Embedder: e})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ text, planet, lang string }{
		{"Mars moons: Phobos and Deimos.", "mars", "en"},
		{"Venus moons: none at all.", "venus", "en"},
		{"Lunes de Mars : Phobos et Deimos.", "mars", "fr"},
	} {
		if _, err := k.Insert(context.Background(), knowledge.Content{Text: c.text, Metadata: map[string]any{"planet": c.planet, "lang": c.lang}}); err != nil {
			t.Fatal(err)
		}
	}
	return k
}

// lastUser is the last user message of a member's first request.
func lastUser(t *testing.T, r *recorder) string {
	t.Helper()
	reqs := r.requests()
	if len(reqs) == 0 {
		t.Fatal("the member was not called")
	}
	var s string
	for _, m := range reqs[0] {
		if m.Role == model.RoleUser {
			s = m.Content
		}
	}
	return s
}

// A team run's knowledge filters reach, as in Agno, the members (also
// through a member team) that have a knowledge base and no filters of their
// own; a member with its own filters keeps them.
func TestRun_KnowledgeFiltersReachTheMembersThatTakeThem(t *testing.T) {
	t.Parallel()
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			t.Parallel()
			knowledgeFiltersReachMembers(t, stream)
		})
	}
}

func knowledgeFiltersReachMembers(t *testing.T, stream bool) {
	d := openDB(t)
	k := taggedKnowledge(t, d)
	open, own, nested := &recorder{Model: scripted.Reply("ok")}, &recorder{Model: scripted.Reply("ok")}, &recorder{Model: scripted.Reply("ok")}
	sub := mustTeam(t, Config{ID: "sub", Model: script(call(ToolDelegate, map[string]any{"member_id": "nested", "task": "moons"}), answer("sub done")),
		Members: []*agent.Agent{mustAgent(t, agent.Config{ID: "nested", Model: nested, Knowledge: k, AddKnowledgeToContext: true})}})
	tm := mustTeam(t, Config{ID: "t", Model: script(
		call(ToolDelegate, map[string]any{"member_id": "open", "task": "moons"}),
		call(ToolDelegate, map[string]any{"member_id": "own", "task": "moons"}),
		call(ToolDelegate, map[string]any{"member_id": "sub", "task": "moons"}),
		answer("done")),
		Members: []*agent.Agent{
			mustAgent(t, agent.Config{ID: "open", Model: open, Knowledge: k, AddKnowledgeToContext: true}),
			mustAgent(t, agent.Config{ID: "own", Model: own, Knowledge: k, AddKnowledgeToContext: true, KnowledgeFilters: map[string]any{"lang": "fr"}}),
		},
		Teams: []*Team{sub}})
	opt := agent.WithKnowledgeFilters(map[string]any{"planet": "venus"})
	if stream {
		collect(t, tm.Stream(context.Background(), run.TextInput("moons?"), opt))
	} else if _, err := tm.Run(context.Background(), run.TextInput("moons?"), opt); err != nil {
		t.Fatal(err)
	}
	for name, r := range map[string]*recorder{"open": open, "nested": nested} {
		if s := lastUser(t, r); !strings.Contains(s, "Venus moons") || strings.Contains(s, "Mars moons") || strings.Contains(s, "Lunes") {
			t.Errorf("stream=%v: member %s searched without the run's filters: %s", stream, name, s)
		}
	}
	if s := lastUser(t, own); !strings.Contains(s, "Lunes") || strings.Contains(s, "Venus") {
		t.Errorf("stream=%v: member own lost its own filters: %s", stream, s)
	}
}

// Options the team cannot honour are refused, naming the option, before the
// leader runs or anything is stored.
func TestRun_RefusesTheOptionsItCannotHonour(t *testing.T) {
	t.Parallel()
	tests := []struct {
		option string
		opt    agent.RunOption
	}{
		// No member has a knowledge base: the filters would change nothing.
		{"WithKnowledgeFilters", agent.WithKnowledgeFilters(map[string]any{"planet": "mars"})},
		{"WithTools", agent.WithTools([]run.ToolExecution{{ToolCallID: "c1"}})},
		{"WithRequirements", agent.WithRequirements([]run.Requirement{{ID: "r1"}})},
	}
	d := openDB(t)
	for _, tt := range tests {
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/stream=%v", tt.option, stream), func(t *testing.T) {
				t.Parallel()
				leader := &recorder{Model: scripted.Reply("done")}
				tm := mustTeam(t, Config{ID: "t", Model: leader, DB: d,
					Members: []*agent.Agent{mustAgent(t, agent.Config{ID: "plain", Model: scripted.Reply("ok")})}})
				session := tt.option
				if stream {
					session += "-stream"
				}
				var err error
				if stream {
					n := 0
					for _, e := range tm.Stream(context.Background(), run.TextInput("hi"), agent.WithSessionID(session), tt.opt) {
						n++
						err = e
					}
					if n != 1 {
						t.Errorf("Stream yielded %d values, want the error only", n)
					}
				} else {
					var out *run.Output
					out, err = tm.Run(context.Background(), run.TextInput("hi"), agent.WithSessionID(session), tt.opt)
					if out != nil {
						t.Errorf("Run returned a run (%s)", out.Status)
					}
				}
				var ue *agent.UnsupportedOptionError
				if !errors.Is(err, agent.ErrUnsupportedOption) || !errors.As(err, &ue) || ue.Option != tt.option || ue.Runner.ID != "t" {
					t.Fatalf("err = %v, want an *agent.UnsupportedOptionError naming %s for team t", err, tt.option)
				}
				if n := len(leader.requests()); n != 0 {
					t.Errorf("the leader was called %d times", n)
				}
				if rows := sessionRuns(t, d, session); len(rows) != 0 {
					t.Errorf("%d runs stored, want none", len(rows))
				}
			})
		}
	}
}

// WithAddHistoryToContext overrides Config.AddHistoryToContext for the
// team run (the leader's context), both ways.
func TestRun_WithAddHistoryToContextOverridesTheTeams(t *testing.T) {
	t.Parallel()
	for _, configured := range []bool{true, false} {
		t.Run(fmt.Sprintf("configured=%v", configured), func(t *testing.T) {
			t.Parallel()
			historyOverride(t, configured)
		})
	}
}

func historyOverride(t *testing.T, configured bool) {
	d := openDB(t)
	leader := &recorder{Model: scripted.Reply("done")}
	tm := mustTeam(t, Config{ID: "t", Model: leader, DB: d, AddHistoryToContext: configured,
		Members: []*agent.Agent{mustAgent(t, agent.Config{ID: "m", Model: scripted.Reply("ok")})}})
	ctx := context.Background()
	if _, err := tm.Run(ctx, run.TextInput("first"), agent.WithSessionID("s")); err != nil {
		t.Fatal(err)
	}
	if _, err := tm.Run(ctx, run.TextInput("second"), agent.WithSessionID("s"), agent.WithAddHistoryToContext(!configured)); err != nil {
		t.Fatal(err)
	}
	hist := 0
	for _, m := range leader.requests()[1] {
		if m.FromHistory {
			hist++
		}
	}
	if got := hist > 0; got != !configured {
		t.Errorf("configured %v, run %v: %d history messages", configured, !configured, hist)
	}
}

// WithOutputSchema makes the team run's content structured.
func TestRun_WithOutputSchemaShapesTheTeamsContent(t *testing.T) {
	t.Parallel()
	tm := mustTeam(t, Config{ID: "t", Model: scripted.Reply(`{"answer":"42"}`),
		Members: []*agent.Agent{mustAgent(t, agent.Config{ID: "m", Model: scripted.Reply("ok")})}})
	schema := json.RawMessage(`{"type":"object","properties":{"answer":{"type":"string"}},"required":["answer"]}`)
	out, err := tm.Run(context.Background(), run.TextInput("q"), agent.WithOutputSchema(schema, "Answer"))
	if err != nil {
		t.Fatal(err)
	}
	if m, ok := out.Content.(map[string]any); !ok || m["answer"] != "42" || out.ContentType == "str" {
		t.Errorf("content = %#v (%s), want the structured answer", out.Content, out.ContentType)
	}
}

// A continue takes the run's knowledge filters as a run does, and refuses
// them the same way.
func TestContinueRun_RefusesKnowledgeFiltersNoMemberTakes(t *testing.T) {
	t.Parallel()
	leader := &recorder{Model: scripted.Reply("done")}
	tm := mustTeam(t, Config{ID: "t", Model: leader, Members: []*agent.Agent{mustAgent(t, agent.Config{ID: "plain", Model: scripted.Reply("ok")})}})
	paused := &run.Output{RunID: "r1", SessionID: "s1", TeamID: "t", Status: run.StatusPaused}
	_, err := tm.ContinueRun(context.Background(), paused, agent.WithKnowledgeFilters(map[string]any{"planet": "mars"}))
	var ue *agent.UnsupportedOptionError
	if !errors.As(err, &ue) || ue.Option != "WithKnowledgeFilters" {
		t.Fatalf("err = %v, want an *agent.UnsupportedOptionError naming WithKnowledgeFilters", err)
	}
	if n := len(leader.requests()); n != 0 {
		t.Errorf("the leader was called %d times", n)
	}
}

// The team run's metadata (WithMetadata with Config.Metadata over it) is,
// as in Agno, every member run's, with the member's own configuration.
func TestRun_MemberRunsGetTheTeamRunsMetadata(t *testing.T) {
	t.Parallel()
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			t.Parallel()
			d := openDB(t)
			sub := mustTeam(t, Config{ID: "sub", Model: script(call(ToolDelegate, map[string]any{"member_id": "nested", "task": "x"}), answer("sub done")),
				Members: []*agent.Agent{mustAgent(t, agent.Config{ID: "nested", Model: scripted.Reply("ok"), DB: d})}, DB: d})
			tm := mustTeam(t, Config{ID: "t", DB: d, Metadata: map[string]any{"team": "t"}, Model: script(
				call(ToolDelegate, map[string]any{"member_id": "m", "task": "x"}),
				call(ToolDelegate, map[string]any{"member_id": "sub", "task": "x"}),
				answer("done")),
				Members: []*agent.Agent{mustAgent(t, agent.Config{ID: "m", Model: scripted.Reply("ok"), DB: d, Metadata: map[string]any{"member": "m"}})},
				Teams:   []*Team{sub}})
			opts := []agent.RunOption{agent.WithSessionID("s"), agent.WithMetadata(map[string]any{"caller": "c"})}
			if stream {
				collect(t, tm.Stream(context.Background(), run.TextInput("go"), opts...))
			} else if _, err := tm.Run(context.Background(), run.TextInput("go"), opts...); err != nil {
				t.Fatal(err)
			}
			rows := sessionRuns(t, d, "s")
			if len(rows) != 4 {
				t.Fatalf("%d runs stored, want 4 (team, m, sub, nested)", len(rows))
			}
			for _, r := range rows {
				out, err := r.Output()
				if err != nil {
					t.Fatal(err)
				}
				md := out.Metadata
				who := out.AgentID + out.TeamID
				if md["caller"] != "c" || md["team"] != "t" {
					t.Errorf("run of %s: metadata %v lacks the team run's", who, md)
				}
				if who == "m" && md["member"] != "m" {
					t.Errorf("member m: metadata %v lacks its own", md)
				}
			}
		})
	}
}

// CheckOptions (what agentos asks before it stores a run) refuses what Run
// refuses, the leader's refusals included: WithAddHistoryToContext(true)
// on a team without a DB (no history to read), and accepts what Run runs.
func TestCheckOptions_AgreesWithRun(t *testing.T) {
	t.Parallel()
	d := openDB(t)
	for _, tt := range []struct {
		name    string
		withDB  bool
		opt     agent.RunOption
		refused string // the option refused, "" when accepted
	}{
		{"history without a db", false, agent.WithAddHistoryToContext(true), "WithAddHistoryToContext"},
		{"no history without a db", false, agent.WithAddHistoryToContext(false), ""},
		{"history with a db", true, agent.WithAddHistoryToContext(true), ""},
		{"knowledge filters no member takes", true, agent.WithKnowledgeFilters(map[string]any{"a": "b"}), "WithKnowledgeFilters"},
		{"tools outside a continue", true, agent.WithTools([]run.ToolExecution{{ToolCallID: "c1"}}), "WithTools"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg := Config{ID: "t", Model: scripted.Reply("done"), Members: []*agent.Agent{mustAgent(t, agent.Config{ID: "plain", Model: scripted.Reply("ok")})}}
			if tt.withDB {
				cfg.DB = d
			}
			tm := mustTeam(t, cfg)
			refusedBy := func(err error) string {
				var ue *agent.UnsupportedOptionError
				if errors.As(err, &ue) && ue.Runner.ID == "t" {
					return ue.Option
				}
				if err != nil {
					t.Fatalf("err = %v, want nil or an *agent.UnsupportedOptionError", err)
				}
				return ""
			}
			if got := refusedBy(tm.CheckOptions(agent.WithSessionID(tt.name), tt.opt)); got != tt.refused {
				t.Errorf("CheckOptions refused %q, want %q", got, tt.refused)
			}
			_, err := tm.Run(context.Background(), run.TextInput("hi"), agent.WithSessionID(tt.name), tt.opt)
			if got := refusedBy(err); got != tt.refused {
				t.Errorf("Run refused %q, want %q", got, tt.refused)
			}
		})
	}
}
