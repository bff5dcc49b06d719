package mcpserver

import (
	"context"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/agentos/auth"
	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/model/scripted"
	"github.com/agentryhq/agentry/run"
	"github.com/agentryhq/agentry/team"
	"github.com/agentryhq/agentry/tool"
)

// hitlFixture serves an agent and a team whose member call a tool needing
// confirmation, so their runs pause.
type hitlFixture struct {
	*harness
	executed atomic.Int32
	// entered, when set, receives a value as the tool starts, which then
	// waits for release.
	entered chan struct{}
	release chan struct{}
}

func newHITL(t *testing.T) *hitlFixture {
	t.Helper()
	return newHITLWith(t, harnessConfig{})
}

// newHITLWith is newHITL on a harness configured by hc (its build is set
// here).
func newHITLWith(t *testing.T, hc harnessConfig) *hitlFixture {
	t.Helper()
	f := &hitlFixture{}
	del := tool.MustFunc(tool.FuncConfig{Name: "delete_file", Description: "Deletes a file.", RequiresConfirmation: true},
		func(ctx context.Context, _ struct{}) (string, error) {
			f.executed.Add(1)
			if f.entered != nil {
				f.entered <- struct{}{}
				<-f.release
			}
			return "deleted", nil
		})
	pausing := func(id string) *agent.Agent {
		t.Helper()
		a, err := agent.New(agent.Config{ID: id, Tools: []tool.Tool{del}, Model: scripted.MustNew(scripted.Config{Turns: []scripted.Turn{
			{ToolCalls: []scripted.ToolCall{{Name: "delete_file"}}}, {Content: "all done"}}})})
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	hc.build = func(d *db.DB) ([]*agent.Agent, []*team.Team) {
		hitl, err := agent.New(agent.Config{ID: "hitl", DB: d, Tools: []tool.Tool{del}, Model: scripted.MustNew(scripted.Config{Turns: []scripted.Turn{
			{ToolCalls: []scripted.ToolCall{{Name: "delete_file"}}}, {Content: "all done"}}})})
		if err != nil {
			t.Fatal(err)
		}
		leader := scripted.MustNew(scripted.Config{Turns: []scripted.Turn{
			{ToolCalls: []scripted.ToolCall{{Name: team.ToolDelegate, Args: map[string]any{"member_id": "member", "task": "delete it"}}}},
			{Content: "the team is done"},
		}})
		crew, err := team.New(team.Config{ID: "crew", Model: leader, Members: []*agent.Agent{pausing("member")}, DB: d})
		if err != nil {
			t.Fatal(err)
		}
		return []*agent.Agent{hitl}, []*team.Team{crew}
	}
	f.harness = newHarness(t, hc)
	return f
}

// confirmAll marks every requirement of a paused run's answer confirmed.
func confirmAll(t *testing.T, r *mcp.CallToolResult) (runID, sessionID string, reqs []any) {
	t.Helper()
	st := structuredMap(t, r)
	if st["status"] != "PAUSED" {
		t.Fatalf("run = %v (%q), want PAUSED", st, resultText(r))
	}
	reqs, _ = st["requirements"].([]any)
	if len(reqs) == 0 {
		t.Fatalf("paused run without requirements: %v", st)
	}
	for _, q := range reqs {
		q.(map[string]any)["tool_execution"].(map[string]any)["confirmed"] = true
	}
	return st["run_id"].(string), st["session_id"].(string), reqs
}

// A paused team run (run_team answered PAUSED with requirements) is
// continued by continue_run with the team_id, as by the team's HTTP
// continue route; continue_run used to answer that team runs never pause.
func TestContinueRun_ContinuesAPausedTeamRun(t *testing.T) {
	f := newHITL(t)
	cs := f.mustConnect(t, token(t, "alice", time.Now().Add(time.Hour)))
	runID, sessionID, reqs := confirmAll(t, callTool(t, cs, "run_team", map[string]any{"team_id": "crew", "message": "clean up"}))
	if f.executed.Load() != 0 {
		t.Fatal("the tool ran before confirmation")
	}
	r := callTool(t, cs, "continue_run", map[string]any{"team_id": "crew", "run_id": runID, "session_id": sessionID, "requirements": reqs})
	if r.IsError || !strings.Contains(resultText(r), "the team is done") {
		t.Fatalf("continue_run(team) = %q (error %v)", resultText(r), r.IsError)
	}
	if st := structuredMap(t, r); st["status"] != "COMPLETED" {
		t.Fatalf("continued team run = %v", st)
	}
	if n := f.executed.Load(); n != 1 {
		t.Fatalf("the confirmed tool ran %d times, want 1", n)
	}
}

// Two continue_run calls racing for one paused run execute its confirmed
// tool once: the second is refused while the first holds the run.
func TestContinueRun_ConcurrentCallsExecuteOnce(t *testing.T) {
	f := newHITL(t)
	cs := f.mustConnect(t, token(t, "alice", time.Now().Add(time.Hour)))
	runID, sessionID, reqs := confirmAll(t, callTool(t, cs, "run_agent", map[string]any{"agent_id": "hitl", "message": "clean up"}))
	f.entered, f.release = make(chan struct{}, 2), make(chan struct{})
	args := map[string]any{"agent_id": "hitl", "run_id": runID, "session_id": sessionID, "requirements": reqs}
	type answer struct {
		r   *mcp.CallToolResult
		err error
	}
	first, second := make(chan answer, 1), make(chan answer, 1)
	// Two client sessions: the SDK serves one session's calls in order.
	other := f.mustConnect(t, token(t, "alice", time.Now().Add(time.Hour)))
	call := func(cs *mcp.ClientSession, out chan<- answer) {
		r, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "continue_run", Arguments: args})
		out <- answer{r, err}
	}
	go call(cs, first)
	select {
	case <-f.entered:
	case a := <-first:
		t.Fatalf("first continue_run ended without running the tool: %v %q", a.err, resultText(a.r))
	}
	go call(other, second)
	var b answer
	select {
	case b = <-second:
	case <-f.entered:
		close(f.release)
		<-first
		t.Fatal("a second continue_run executed the confirmed tool while the first held the run")
	}
	close(f.release)
	a := <-first
	if a.err != nil || a.r.IsError {
		t.Fatalf("first continue_run: %v %q", a.err, resultText(a.r))
	}
	if b.err != nil || !b.r.IsError {
		t.Fatalf("second continue_run = %v %v, want a tool error", b.err, b.r)
	}
	if n := f.executed.Load(); n != 1 {
		t.Fatalf("the confirmed tool ran %d times, want 1", n)
	}
}

// A continued run is the stored run's, whoever continues it: continue_run
// registers it with the OS (Begin: the cancel route, graceful shutdown) and
// observes it (ObserveCall: its span, whose user isolates stored traces)
// under the run's own user and session, as the HTTP continue route does.
// A caller acting for every user (unauthenticated) continuing alice's run
// gave its own user, and the session only when the call named it; and
// Begin was never called.
func TestContinueRun_RegisteredAndObservedAsTheRunsOwner(t *testing.T) {
	type seen struct{ hook, runID, sessionID, userID string }
	calls := make(chan seen, 8)
	f := newHITLWith(t, harnessConfig{
		excluded: true,
		begin: func(ctx context.Context, _ Target, runID, userID string) (context.Context, func(), error) {
			calls <- seen{"begin", runID, "", userID}
			return ctx, func() {}, nil
		},
		observeCall: func(ctx context.Context, _ Target, runID, sessionID, userID string, call func(context.Context) (*run.Output, error)) (*run.Output, error) {
			calls <- seen{"observe", runID, sessionID, userID}
			return call(ctx)
		},
	})
	hour := time.Now().Add(time.Hour)
	alice := f.mustConnect(t, token(t, "alice", hour))
	runID, sessionID, reqs := confirmAll(t, callTool(t, alice, "run_agent", map[string]any{"agent_id": "hitl", "message": "clean up"}))
	if c := <-calls; c.hook != "begin" || c.userID != "alice" {
		t.Fatalf("run_agent's hook call %+v", c)
	}
	anon := f.mustConnect(t, "")
	r := callTool(t, anon, "continue_run", map[string]any{"agent_id": "hitl", "run_id": runID, "requirements": reqs})
	if r.IsError {
		t.Fatalf("an unauthenticated continue_run: %q", resultText(r))
	}
	close(calls)
	var got []seen
	for c := range calls {
		got = append(got, c)
	}
	want := []seen{{"begin", runID, "", "alice"}, {"observe", runID, sessionID, "alice"}}
	if !slices.Equal(got, want) {
		t.Fatalf("continue_run's hook calls %+v, want %+v", got, want)
	}
}

// An unauthenticated caller naming user_id continues only that user's
// run, as the HTTP continue route: another user's run is not found and
// stays paused (user_id was ignored). An authenticated caller, an admin
// too, continues its own user's runs only: an admin's continue of alice's
// run, with or without user_id alice, is not found.
func TestContinueRun_UserIDNamesTheRunsOwner(t *testing.T) {
	f := newHITLWith(t, harnessConfig{excluded: true})
	hour := time.Now().Add(time.Hour)
	alice := f.mustConnect(t, token(t, "alice", hour))
	runID, sessionID, reqs := confirmAll(t, callTool(t, alice, "run_agent", map[string]any{"agent_id": "hitl", "message": "clean up"}))
	admin := f.mustConnect(t, token(t, "root", hour, auth.AdminScope))
	anon := f.mustConnect(t, "")
	args := map[string]any{"agent_id": "hitl", "run_id": runID, "session_id": sessionID, "requirements": reqs, "user_id": "bob"}
	for _, c := range []struct {
		name  string
		who   *mcp.ClientSession
		named string
	}{{"unauthenticated as bob", anon, "bob"}, {"admin", admin, ""}, {"admin as alice", admin, "alice"}} {
		args["user_id"] = c.named
		r := callTool(t, c.who, "continue_run", args)
		if !r.IsError || !strings.Contains(resultText(r), "not found") {
			t.Fatalf("%s: continue_run of alice's run = %q (error %v), want not found", c.name, resultText(r), r.IsError)
		}
	}
	if n := f.executed.Load(); n != 0 {
		t.Fatalf("the tool ran %d times", n)
	}
	args["user_id"] = "alice"
	if r := callTool(t, anon, "continue_run", args); r.IsError || f.executed.Load() != 1 {
		t.Fatalf("continue_run as alice = %q (error %v), executed %d", resultText(r), r.IsError, f.executed.Load())
	}
}
