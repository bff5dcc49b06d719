package agent

import (
	"context"
	"errors"
	"iter"
	"sync"
	"testing"
	"time"

	"github.com/agentryhq/agentry/model"
	"github.com/agentryhq/agentry/model/scripted"
	"github.com/agentryhq/agentry/run"
	"github.com/agentryhq/agentry/tool"
)

func script(t testing.TB, turns ...scripted.Turn) *scripted.Model {
	t.Helper()
	m, err := scripted.New(scripted.Config{Turns: turns})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func mustAgent(t testing.TB, cfg Config) *Agent {
	t.Helper()
	a, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

type addArgs struct {
	A int `json:"a"`
	B int `json:"b"`
}

func addTool() tool.Tool {
	return tool.MustFunc(tool.FuncConfig{Name: "add", Description: "Adds two integers."},
		func(_ context.Context, in addArgs) (int, error) { return in.A + in.B, nil })
}

type noArgs struct{}

func funcTool(name string, cfg tool.FuncConfig, fn func(context.Context) (string, error)) tool.Tool {
	cfg.Name, cfg.Description = name, "Test tool "+name+"."
	return tool.MustFunc(cfg, func(ctx context.Context, _ noArgs) (string, error) { return fn(ctx) })
}

func collect(t testing.TB, seq iter.Seq2[run.Event, error]) []run.Event {
	t.Helper()
	var evs []run.Event
	for ev, err := range seq {
		if err != nil {
			t.Fatalf("stream error: %v", err)
		}
		evs = append(evs, ev)
	}
	return evs
}

func names(evs []run.Event) []run.EventType {
	out := make([]run.EventType, len(evs))
	for i, e := range evs {
		out[i] = e.Event
	}
	return out
}

func find(evs []run.Event, t run.EventType) *run.Event {
	for i := range evs {
		if evs[i].Event == t {
			return &evs[i]
		}
	}
	return nil
}

func count(evs []run.Event, t run.EventType) int {
	n := 0
	for _, e := range evs {
		if e.Event == t {
			n++
		}
	}
	return n
}

// recorder wraps a model and keeps every request's messages.
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

// barrier makes n tool calls wait for each other: it only succeeds when all of
// them are in flight at once, proving concurrency without timing assertions.
type barrier struct {
	wg sync.WaitGroup
}

func newBarrier(n int) *barrier {
	b := &barrier{}
	b.wg.Add(n)
	return b
}

func (b *barrier) arrive(ctx context.Context) (string, error) {
	b.wg.Done()
	done := make(chan struct{})
	go func() { b.wg.Wait(); close(done) }()
	select {
	case <-done:
		return "met", nil
	case <-time.After(10 * time.Second):
		return "", errors.New("the other call never arrived: calls are not concurrent")
	case <-ctx.Done():
		return "", ctx.Err()
	}
}
