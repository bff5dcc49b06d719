package team

import (
	"context"
	"iter"
	"sync"
	"testing"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/model"
	"github.com/agentryhq/agentry/model/scripted"
	"github.com/agentryhq/agentry/run"
	"github.com/agentryhq/agentry/tool"
)

func script(turns ...scripted.Turn) *scripted.Model {
	return scripted.MustNew(scripted.Config{Turns: turns})
}

func call(name string, args map[string]any) scripted.Turn {
	return scripted.Turn{ToolCalls: []scripted.ToolCall{{Name: name, Args: args}}}
}

func match(m string, t scripted.Turn) scripted.Turn { t.Match = m; return t }

func answer(s string) scripted.Turn { return scripted.Turn{Content: s} }

func mustAgent(t testing.TB, cfg agent.Config) *agent.Agent {
	t.Helper()
	a, err := agent.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func mustTeam(t testing.TB, cfg Config) *Team {
	t.Helper()
	tm, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return tm
}

func collect(t testing.TB, seq iter.Seq2[run.Event, error]) []run.Event {
	t.Helper()
	var evs []run.Event
	for ev, err := range seq {
		if err != nil {
			t.Fatal(err)
		}
		evs = append(evs, ev)
	}
	return evs
}

// names lists the events of the run runID (its own, not forwarded ones).
func names(evs []run.Event, runID string) []run.EventType {
	var out []run.EventType
	for _, e := range evs {
		if e.RunID == runID && e.Event != "TeamRunContent" && e.Event != "TeamModelRequestStarted" && e.Event != "TeamModelRequestCompleted" {
			out = append(out, e.Event)
		}
	}
	return out
}

// blocking is a model that signals started and answers only when its
// request's context ends (so a cancel is the only way out).
type blocking struct {
	model.Model
	started chan struct{}
	once    sync.Once
}

func newBlocking() *blocking {
	return &blocking{Model: scripted.Reply("never"), started: make(chan struct{})}
}

func (b *blocking) Stream(ctx context.Context, req *model.Request) iter.Seq2[*model.Chunk, error] {
	return func(yield func(*model.Chunk, error) bool) {
		b.once.Do(func() { close(b.started) })
		<-ctx.Done()
		yield(nil, ctx.Err())
	}
}

// confirmTool needs the user's confirmation before it runs.
func confirmTool(ran *int32) tool.Tool {
	var mu sync.Mutex
	return tool.MustFunc(tool.FuncConfig{Name: "deploy", Description: "Deploys.", RequiresConfirmation: true},
		func(context.Context, struct{}) (string, error) {
			mu.Lock()
			*ran++
			mu.Unlock()
			return "deployed", nil
		})
}

func rowsOf(t *testing.T, d *db.DB, sessionID string) map[string]*db.Run {
	t.Helper()
	rows := sessionRuns(t, d, sessionID)
	m := map[string]*db.Run{}
	for i := range rows {
		m[rows[i].RunID] = &rows[i]
	}
	return m
}

func boolp(b bool) *bool { return &b }
