package agentos

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/dbtest/testdbs"
	"github.com/agentryhq/agentry/knowledge"
	"github.com/agentryhq/agentry/model/scripted"
	"github.com/agentryhq/agentry/queue"
	"github.com/agentryhq/agentry/team"
	"github.com/agentryhq/agentry/workflow"
)

// Agno passes every other run form field on to the run; the ones Agentry
// does not implement are refused, never accepted and ignored, and nothing
// is stored for them.
func TestRunForm_UnsupportedFieldsAre422AndStoreNothing(t *testing.T) {
	t.Parallel()
	f := newRunsFixture(t, Config{})
	for _, field := range []string{"debug_mode", "add_dependencies_to_context", "add_session_state_to_context", "stream_events",
		"factory_input", "use_json_schema", "no_such_field"} {
		res := postForm(t, f.url+"/agents/echo/runs", map[string]string{"message": "hi", "stream": "false", field: "true"}, nil)
		if res.status != http.StatusUnprocessableEntity || !strings.Contains(res.detail(t), `field "`+field+`" is not supported`) {
			t.Errorf("%s: %d %s", field, res.status, res.body)
		}
	}
	if n := countRuns(t, f.db, db.RunFilter{}); n != 0 {
		t.Errorf("%d runs stored for refused forms", n)
	}
}

// knowledgeRunServer serves agent "kb" (knowledge searched into the user
// message, filtered on lang=en), agent "plain" (no knowledge) and team
// "crew"; durable runs background runs on the durable queue.
func knowledgeRunServer(t *testing.T, durable bool) (string, *recordingModel) {
	t.Helper()
	d := testdbs.SQLite(t)
	k := testKnowledge(t, d, 0)
	for _, c := range []struct{ text, planet, lang string }{
		{"Mars moons: Phobos and Deimos.", "mars", "en"},
		{"Venus moons: none at all.", "venus", "en"},
		{"Lunes de Mars : Phobos et Deimos.", "mars", "fr"},
	} {
		if _, err := k.Insert(context.Background(), knowledge.Content{Text: c.text, Metadata: map[string]any{"planet": c.planet, "lang": c.lang}}); err != nil {
			t.Fatal(err)
		}
	}
	rec := &recordingModel{Model: scripted.Reply("ok")}
	kb, err := agent.New(agent.Config{ID: "kb", Model: rec, DB: d, Knowledge: k, AddKnowledgeToContext: true, KnowledgeFilters: map[string]any{"lang": "en"}})
	if err != nil {
		t.Fatal(err)
	}
	plain, err := agent.New(agent.Config{ID: "plain", Model: scripted.Reply("ok"), DB: d})
	if err != nil {
		t.Fatal(err)
	}
	crew, err := team.New(team.Config{ID: "crew", Model: scripted.Reply("ok"), DB: d, Members: []*agent.Agent{plain}})
	if err != nil {
		t.Fatal(err)
	}
	flow, err := workflow.New(workflow.Config{ID: "flow", DB: d, Steps: []workflow.Step{{Name: "plain", Runner: plain}}})
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{DBs: []*db.DB{d}, Agents: []*agent.Agent{kb, plain}, Teams: []*team.Team{crew}, Workflows: []*workflow.Workflow{flow}}
	if durable {
		cfg.Queue = &queue.Config{PollInterval: 20 * time.Millisecond}
	}
	var srv *Server
	ts, _ := testServer(t, cfg, func(s *Server) { srv = s })
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		srv.Close(ctx)
	})
	return ts.URL, rec
}

// knowledge_filters narrow the run's knowledge search, merged over the
// agent's own filters (a key of the run replaces the agent's), in a
// foreground run and in a durable background run (through its job).
func TestRunForm_KnowledgeFiltersNarrowTheRunsSearch(t *testing.T) {
	t.Parallel()
	for _, background := range []bool{false, true} {
		t.Run(map[bool]string{false: "foreground", true: "durable background"}[background], func(t *testing.T) {
			t.Parallel()
			knowledgeFiltersNarrowTheSearch(t, background)
		})
	}
}

func knowledgeFiltersNarrowTheSearch(t *testing.T, background bool) {
	u, rec := knowledgeRunServer(t, background)
	userMessage := func() string {
		var last string
		for _, m := range rec.lastMessages() {
			if strings.HasPrefix(m, "user:") {
				last = m
			}
		}
		return last
	}
	for _, tt := range []struct {
		filters   string
		want, not []string
	}{
		{"", []string{"Mars moons", "Venus moons"}, []string{"Lunes"}},
		{`{"planet": "venus"}`, []string{"Venus moons"}, []string{"Mars moons", "Lunes"}},
		{`{"lang": "fr"}`, []string{"Lunes"}, []string{"Mars moons", "Venus moons"}},
	} {
		fields := map[string]string{"message": "moons of the planets", "stream": "false"}
		if tt.filters != "" {
			fields["knowledge_filters"] = tt.filters
		}
		if background {
			fields["background"] = "true"
		}
		res := postForm(t, u+"/agents/kb/runs", fields, nil)
		if background {
			acc := accepted(t, res)
			eventually(t, "the background run", func() bool {
				return get(t, u+"/agents/kb/runs/"+acc.RunID, nil).body != "" && strings.Contains(get(t, u+"/agents/kb/runs/"+acc.RunID, nil).body, `"COMPLETED"`)
			})
		} else if res.status != http.StatusOK {
			t.Fatalf("%s: %d %s", tt.filters, res.status, res.body)
		}
		msg := userMessage()
		for _, w := range tt.want {
			if !strings.Contains(msg, w) {
				t.Errorf("filters %s: the model's user message lacks %q: %s", tt.filters, w, msg)
			}
		}
		for _, n := range tt.not {
			if strings.Contains(msg, n) {
				t.Errorf("filters %s: the model's user message has %q: %s", tt.filters, n, msg)
			}
		}
	}
}

// knowledge_filters that no search could apply are refused: for an agent
// without a knowledge base, for a team without a member taking them, for a
// workflow, in a shape Agentry's filters do not have.
func TestRunForm_KnowledgeFiltersThatCannotApplyAre422(t *testing.T) {
	t.Parallel()
	u, _ := knowledgeRunServer(t, false)
	for _, tt := range []struct{ path, filters, detail string }{
		{"/agents/plain/runs", `{"a": "b"}`, "it has no knowledge base"},
		{"/teams/crew/runs", `{"a": "b"}`, "no member has a knowledge base"},
		{"/workflows/flow/runs", `{"a": "b"}`, `field "knowledge_filters" is not supported for workflow flow`},
		{"/workflows/flow/runs", ``, `field "add_history_to_context" is not supported for workflow flow`}, // add_history_to_context below
		{"/agents/kb/runs", `{"a": {"nested": 1}}`, "value must be a string, number or boolean"},
		{"/agents/kb/runs", `{"op": "AND", "conditions": []}`, "filter expressions"},
		{"/agents/kb/runs", `[{"op": "EQ", "key": "a", "value": 1}]`, "filter expression lists"},
		{"/agents/kb/runs", `"text"`, "must be a JSON object"},
	} {
		fields := map[string]string{"message": "hi", "stream": "false"}
		if tt.filters != "" {
			fields["knowledge_filters"] = tt.filters
		} else {
			fields["add_history_to_context"] = "true"
		}
		res := postForm(t, u+tt.path, fields, nil)
		if res.status != http.StatusUnprocessableEntity || !strings.Contains(res.detail(t), tt.detail) {
			t.Errorf("%s %s: %d %s", tt.path, tt.filters, res.status, res.body)
		}
	}
}

// add_history_to_context overrides the agent's setting for one run.
func TestRunForm_AddHistoryToContextOverridesTheAgentForOneRun(t *testing.T) {
	t.Parallel()
	f := newRunsFixture(t, Config{}) // echo adds history
	first := postForm(t, f.url+"/agents/echo/runs", map[string]string{"message": "remember kiwi", "stream": "false", "session_id": "s1"}, nil)
	if first.status != http.StatusOK {
		t.Fatalf("%d %s", first.status, first.body)
	}
	sawKiwi := func() bool {
		for _, m := range f.echo.lastMessages() {
			if m == "user:remember kiwi" {
				return true
			}
		}
		return false
	}
	for _, tt := range []struct {
		value string
		want  bool
	}{{"false", false}, {"", true}, {"true", true}} {
		fields := map[string]string{"message": "what fruit?", "stream": "false", "session_id": "s1"}
		if tt.value != "" {
			fields["add_history_to_context"] = tt.value
		}
		if res := postForm(t, f.url+"/agents/echo/runs", fields, nil); res.status != http.StatusOK {
			t.Fatalf("%d %s", res.status, res.body)
		}
		if sawKiwi() != tt.want {
			t.Errorf("add_history_to_context=%q: history in the context = %v", tt.value, !tt.want)
		}
	}
	res := postForm(t, f.url+"/agents/echo/runs", map[string]string{"message": "x", "add_history_to_context": "maybe"}, nil)
	if res.status != http.StatusUnprocessableEntity {
		t.Errorf("add_history_to_context=maybe: %d %s", res.status, res.body)
	}
}

// version runs that config version of a stored component; a configured
// component has none, and a version that does not exist (or a draft the
// caller may not read) is 404.
func TestRunForm_VersionRunsThatConfigVersion(t *testing.T) {
	t.Parallel()
	f := newCompFixture(t, componentDBs(t)["sqlite"](t))
	v1 := f.script(t, "v1", "answer one", "")
	want(t, f.send(t, f.alice, "POST", "/components", jsonBody(map[string]any{"name": "Helper", "component_id": "helper", "component_type": "agent",
		"stage": "published", "config": map[string]any{"model": v1}})), 201)
	v2 := f.script(t, "v2", "answer two", "")
	want(t, f.send(t, f.alice, "POST", "/components/helper/configs", jsonBody(map[string]any{"config": map[string]any{"model": v2}})), 201, `"version":2`, `"stage":"draft"`)
	runAt := func(who map[string]string, version string) response {
		h := map[string]string{"Content-Type": "application/x-www-form-urlencoded"}
		for k, v := range who {
			h[k] = v
		}
		return do(t, "POST", f.url+"/agents/helper/runs", strings.NewReader("message=hi&stream=false&version="+version), h)
	}
	want(t, runAt(f.alice, "2"), 200, "answer two")
	want(t, runAt(f.alice, "1"), 200, "answer one")
	want(t, runAt(f.alice, "3"), 404, "Version 3 of agent helper not found")
	want(t, runAt(f.alice, "0"), 422, "positive integer")
	want(t, runAt(f.bob, "1"), 200, "answer one")
	want(t, runAt(f.bob, "2"), 404, "Version 2 of agent helper not found") // alice's draft

	u, _ := knowledgeRunServer(t, false)
	res := postForm(t, u+"/agents/plain/runs", map[string]string{"message": "hi", "stream": "false", "version": "1"}, nil)
	if res.status != http.StatusUnprocessableEntity || !strings.Contains(res.detail(t), "config file, which has no versions") {
		t.Errorf("version of a configured agent: %d %s", res.status, res.body)
	}
}

// A team or a workflow is asked, before anything is stored, whether it
// honours the run's fields: a workflow refuses output_schema (its Run
// would: a 500 after the run was stored, before the check), a team takes
// add_history_to_context (its leader applies it).
func TestRunForm_TeamsAndWorkflowsRefuseWhatTheirRunsWould(t *testing.T) {
	t.Parallel()
	u, _ := knowledgeRunServer(t, false)
	schema := `{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]}`
	for _, background := range []string{"false", "true"} {
		res := postForm(t, u+"/workflows/flow/runs", map[string]string{"message": "hi", "stream": "false", "background": background,
			"output_schema": schema, "session_id": "wf-" + background}, nil)
		if res.status != http.StatusUnprocessableEntity || !strings.Contains(res.detail(t), `field "output_schema" is not supported for workflow flow`) {
			t.Errorf("workflow output_schema, background=%s: %d %s", background, res.status, res.body)
		}
		list := get(t, u+"/sessions/wf-"+background+"?type=workflow", nil)
		if list.status != http.StatusNotFound {
			t.Errorf("a refused workflow run stored its session: %d %s", list.status, list.body)
		}
	}
	res := postForm(t, u+"/teams/crew/runs", map[string]string{"message": "hi", "stream": "false", "add_history_to_context": "false"}, nil)
	if res.status != http.StatusOK {
		t.Errorf("team add_history_to_context: %d %s", res.status, res.body)
	}
}

// An agent or a team is asked (agent.OptionChecker) whether it honours the
// run form's fields, with the switch its Run refuses them with: one without
// a database refuses add_history_to_context=true (there is no history to
// read) with a 422 naming the field, before its model is asked or anything
// is stored, streamed or not, and runs with add_history_to_context=false.
func TestRunForm_AgentsAndTeamsRefuseWhatTheirRunsWould(t *testing.T) {
	t.Parallel()
	d := testdbs.SQLite(t)
	rec := &recordingModel{Model: scripted.Reply("ok")}
	loner, err := agent.New(agent.Config{ID: "loner", Model: rec})
	if err != nil {
		t.Fatal(err)
	}
	member, err := agent.New(agent.Config{ID: "member", Model: scripted.Reply("ok")})
	if err != nil {
		t.Fatal(err)
	}
	loose, err := team.New(team.Config{ID: "loose", Model: rec, Members: []*agent.Agent{member}})
	if err != nil {
		t.Fatal(err)
	}
	ts, _ := testServer(t, Config{DBs: []*db.DB{d}, Agents: []*agent.Agent{loner}, Teams: []*team.Team{loose}}, nil)
	for _, c := range []struct{ path, detail string }{
		{"/agents/loner/runs", `field "add_history_to_context" is not supported for agent loner: it has no database`},
		{"/teams/loose/runs", `field "add_history_to_context" is not supported for team loose: it has no database`},
	} {
		for _, stream := range []string{"false", "true"} {
			res := postForm(t, ts.URL+c.path, map[string]string{"message": "hi", "stream": stream, "session_id": "s-" + stream,
				"add_history_to_context": "true"}, nil)
			if res.status != http.StatusUnprocessableEntity || !strings.Contains(res.detail(t), c.detail) {
				t.Errorf("%s stream=%s: %d %s", c.path, stream, res.status, res.body)
			}
		}
		if msgs := rec.lastMessages(); len(msgs) != 0 {
			t.Fatalf("%s: the model was asked: %v", c.path, msgs)
		}
		if n := countRuns(t, d, db.RunFilter{}); n != 0 {
			t.Errorf("%s: %d runs stored for refused forms", c.path, n)
		}
		res := postForm(t, ts.URL+c.path, map[string]string{"message": "hi", "stream": "false", "add_history_to_context": "false"}, nil)
		if res.status != http.StatusOK {
			t.Errorf("%s add_history_to_context=false: %d %s", c.path, res.status, res.body)
		}
		rec.mu.Lock()
		rec.last = nil
		rec.mu.Unlock()
	}
}
