package agent_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/dbtest/testdbs"
	"github.com/agentryhq/agentry/embedder/local"
	"github.com/agentryhq/agentry/knowledge"
	"github.com/agentryhq/agentry/model/scripted"
	"github.com/agentryhq/agentry/run"
	"github.com/agentryhq/agentry/vectordb/embedded"
)

var _ agent.OptionChecker = (*agent.Agent)(nil)

// entry starts a run of a by one of the agent's entry points and returns its
// error (Stream's: the first value it yields).
type entry struct {
	name string
	call func(ctx context.Context, a *agent.Agent, paused *run.Output, opts ...agent.RunOption) error
}

var (
	runEntry = entry{"Run", func(ctx context.Context, a *agent.Agent, _ *run.Output, opts ...agent.RunOption) error {
		_, err := a.Run(ctx, run.TextInput("deploy it"), opts...)
		return err
	}}
	streamEntry = entry{"Stream", func(ctx context.Context, a *agent.Agent, _ *run.Output, opts ...agent.RunOption) error {
		for _, err := range a.Stream(ctx, run.TextInput("deploy it"), opts...) {
			return err
		}
		return errors.New("the stream yielded nothing")
	}}
	continueEntry = entry{"ContinueRun", func(ctx context.Context, a *agent.Agent, paused *run.Output, opts ...agent.RunOption) error {
		_, err := a.ContinueRun(ctx, paused, opts...)
		return err
	}}
	continueStreamEntry = entry{"ContinueStream", func(ctx context.Context, a *agent.Agent, paused *run.Output, opts ...agent.RunOption) error {
		for _, err := range a.ContinueStream(ctx, paused, opts...) {
			return err
		}
		return errors.New("the stream yielded nothing")
	}}
)

// refused checks that err is the refusal of option, before the model was
// asked or anything stored.
func refused(t *testing.T, err error, option string, rec *promptRecorder, asked int, d *db.DB, stored int) {
	t.Helper()
	var ue *agent.UnsupportedOptionError
	if !errors.Is(err, agent.ErrUnsupportedOption) || !errors.As(err, &ue) || ue.Option != option {
		t.Fatalf("err %v, want the refusal of %s", err, option)
	}
	if len(rec.reqs) != asked {
		t.Errorf("the model was asked %d times, want %d", len(rec.reqs), asked)
	}
	if d == nil {
		return
	}
	if rows, _, err := d.GetRuns(context.Background(), db.RunFilter{Limit: 10, Page: 1}); err != nil || len(rows) != stored {
		t.Errorf("%d runs stored (%v), want %d", len(rows), err, stored)
	}
}

// WithTools and WithRequirements resolve a paused run's tools: a new run
// has none, so Run and Stream refuse them rather than ignore them.
func TestRun_RefusesTheResolutionsOfAContinue(t *testing.T) {
	t.Parallel()
	options := map[string]agent.RunOption{
		"WithTools":        agent.WithTools([]run.ToolExecution{{ToolCallID: "c1", Confirmed: new(true)}}),
		"WithRequirements": agent.WithRequirements([]run.Requirement{{ID: "r1"}}),
	}
	for option, opt := range options {
		for _, e := range []entry{runEntry, streamEntry} {
			t.Run(option+"/"+e.name, func(t *testing.T) {
				t.Parallel()
				d := testdbs.SQLite(t)
				a, rec := confirmAgent(t, agent.Config{DB: d})
				refused(t, a.CheckOptions(opt), option, rec, 0, d, 0)
				refused(t, e.call(context.Background(), a, nil, opt), option, rec, 0, d, 0)
			})
		}
	}
}

// The resolutions are what a continue takes: there they are honoured.
func TestContinueRun_TakesTheResolutions(t *testing.T) {
	t.Parallel()
	a, _ := confirmAgent(t, agent.Config{})
	paused, err := a.Run(context.Background(), run.TextInput("deploy it"))
	if err != nil || paused.Status != run.StatusPaused {
		t.Fatalf("%v %v", err, paused)
	}
	out, err := a.ContinueRun(context.Background(), paused,
		agent.WithTools([]run.ToolExecution{{ToolCallID: paused.Requirements[0].ToolExecution.ToolCallID, Confirmed: new(true)}}))
	if err != nil || out.Status != run.StatusCompleted || out.Content != "done" {
		t.Fatalf("%v %v", err, out)
	}
}

// An agent without a knowledge base searches nothing: every entry point
// refuses knowledge filters, as CheckOptions (what AgentOS asks before it
// stores a run) says.
func TestRun_RefusesKnowledgeFiltersWithoutAKnowledgeBase(t *testing.T) {
	t.Parallel()
	opt := agent.WithKnowledgeFilters(map[string]any{"planet": "mars"})
	for _, e := range []entry{runEntry, streamEntry, continueEntry, continueStreamEntry} {
		t.Run(e.name, func(t *testing.T) {
			t.Parallel()
			d := testdbs.SQLite(t)
			a, rec := confirmAgent(t, agent.Config{DB: d})
			refused(t, a.CheckOptions(opt), "WithKnowledgeFilters", rec, 0, d, 0)
			paused, err := a.Run(context.Background(), run.TextInput("deploy it"))
			if err != nil || paused.Status != run.StatusPaused {
				t.Fatalf("%v %v", err, paused)
			}
			paused.Requirements[0].ToolExecution.Confirmed = new(true)
			refused(t, e.call(context.Background(), a, paused, opt), "WithKnowledgeFilters", rec, 1, d, 1)
			if got, err := d.GetRun(context.Background(), paused.RunID); err != nil || got.Status != run.StatusPaused {
				t.Errorf("stored run %v (%v), want it still paused", got, err)
			}
		})
	}
}

// With a knowledge base, the filters are taken; an agent composed into a
// team (its leader) takes them too, for its team to honour or refuse.
func TestCheckOptions_TakesKnowledgeFiltersWithAKnowledgeBase(t *testing.T) {
	t.Parallel()
	e := local.New(local.Config{Dimensions: 16})
	vs, err := embedded.Open(context.Background(), embedded.Config{Path: filepath.Join(t.TempDir(), "v.db"), Dimensions: 16, EmbedderID: e.ID()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { vs.Close() })
	k, err := knowledge.New(knowledge.Config{Name: "kb", DB: testdbs.SQLite(t), Vectors: vs, Embedder: e})
	if err != nil {
		t.Fatal(err)
	}
	a, err := agent.New(agent.Config{Model: scripted.Reply("ok"), Knowledge: k, SearchKnowledge: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.CheckOptions(agent.WithKnowledgeFilters(map[string]any{"planet": "mars"})); err != nil {
		t.Fatal(err)
	}
	leader, err := agent.New(agent.Config{Model: scripted.Reply("ok"), Component: run.Component{Type: run.TypeTeam, ID: "t"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := leader.CheckOptions(agent.WithKnowledgeFilters(map[string]any{"planet": "mars"})); err != nil {
		t.Fatal(err)
	}
}

// An agent without a database has no history to add: asking for it is
// refused; asking for none is what the agent does anyway.
func TestRun_RefusesHistoryWithoutADatabase(t *testing.T) {
	t.Parallel()
	for _, e := range []entry{runEntry, streamEntry, continueEntry, continueStreamEntry} {
		t.Run(e.name, func(t *testing.T) {
			t.Parallel()
			a, rec := confirmAgent(t, agent.Config{})
			a, err := agent.New(agent.Config{Model: rec, Tools: a.Config().Tools})
			if err != nil {
				t.Fatal(err)
			}
			refused(t, a.CheckOptions(agent.WithAddHistoryToContext(true)), "WithAddHistoryToContext", rec, 0, nil, 0)
			if err := a.CheckOptions(agent.WithAddHistoryToContext(false)); err != nil {
				t.Fatal(err)
			}
			paused, err := a.Run(context.Background(), run.TextInput("deploy it"), agent.WithAddHistoryToContext(false))
			if err != nil || paused.Status != run.StatusPaused {
				t.Fatalf("%v %v", err, paused)
			}
			paused.Requirements[0].ToolExecution.Confirmed = new(true)
			refused(t, e.call(context.Background(), a, paused, agent.WithAddHistoryToContext(true)), "WithAddHistoryToContext", rec, 1, nil, 0)
		})
	}
}

// A continued run is in its paused run's session: a new one is refused
// (the session would not be read, and its save would replace the stored
// session's state).
func TestContinueRun_RefusesANewSession(t *testing.T) {
	t.Parallel()
	for _, e := range []entry{continueEntry, continueStreamEntry} {
		t.Run(e.name, func(t *testing.T) {
			t.Parallel()
			d := testdbs.SQLite(t)
			a, rec := confirmAgent(t, agent.Config{DB: d})
			paused, err := a.Run(context.Background(), run.TextInput("deploy it"), agent.WithSessionID("s"))
			if err != nil || paused.Status != run.StatusPaused {
				t.Fatalf("%v %v", err, paused)
			}
			paused.Requirements[0].ToolExecution.Confirmed = new(true)
			refused(t, e.call(context.Background(), a, paused, agent.WithNewSession("s")), "WithNewSession", rec, 1, d, 1)
		})
	}
}

// A continued run keeps its paused run's ids: a continue naming another run
// id, session, user or parent run is refused (it would go on as the paused
// run's, silently: continuing alice's run as bob would store it as
// alice's), and the paused run stays PAUSED and continuable; the paused
// run's own ids are accepted.
func TestContinueRun_RefusesTheIdsOfAnotherRun(t *testing.T) {
	t.Parallel()
	for _, e := range []entry{continueEntry, continueStreamEntry} {
		for _, tc := range []struct {
			option string
			opt    agent.RunOption
		}{
			{"WithRunID", agent.WithRunID("another-run")},
			{"WithSessionID", agent.WithSessionID("another-session")},
			{"WithUserID", agent.WithUserID("bob")},
			{"WithParentRunID", agent.WithParentRunID("a-team-run")},
		} {
			t.Run(e.name+"/"+tc.option, func(t *testing.T) {
				t.Parallel()
				d := testdbs.SQLite(t)
				a, rec := confirmAgent(t, agent.Config{DB: d})
				ctx := db.WithUserScope(context.Background(), "alice")
				paused, err := a.Run(ctx, run.TextInput("deploy it"), agent.WithSessionID("s"), agent.WithUserID("alice"))
				if err != nil || paused.Status != run.StatusPaused {
					t.Fatalf("%v %v", err, paused)
				}
				paused.Requirements[0].ToolExecution.Confirmed = new(true)
				refused(t, e.call(ctx, a, paused, tc.opt), tc.option, rec, 1, d, 1)
				row, err := d.GetRun(ctx, paused.RunID)
				if err != nil || row.Status != run.StatusPaused || row.UserID != "alice" {
					t.Fatalf("the paused run after the refusal: %+v %v", row, err)
				}
				out, err := a.ContinueRun(ctx, paused, agent.WithRunID(paused.RunID), agent.WithSessionID("s"), agent.WithUserID("alice"))
				if err != nil || out.Status != run.StatusCompleted || out.UserID != "alice" || out.RunID != paused.RunID {
					t.Fatalf("continued with its own ids: %+v %v", out, err)
				}
			})
		}
	}
}
