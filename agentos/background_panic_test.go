package agentos

import (
	"context"
	"io"
	"iter"
	"log/slog"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/db/sqlite"
	"github.com/agentryhq/agentry/model"
	"github.com/agentryhq/agentry/model/scripted"
	"github.com/agentryhq/agentry/run"
)

// panickingModel is a provider whose client crashes on every call.
type panickingModel struct{ info model.Info }

func (m panickingModel) Info() model.Info { return m.info }

func (panickingModel) Invoke(context.Context, *model.Request) (*model.Response, error) {
	panic("the provider's client crashed")
}

func (panickingModel) Stream(context.Context, *model.Request) iter.Seq2[*model.Chunk, error] {
	panic("the provider's client crashed")
}

// TestBackgroundRun_PanicEndsTheRunInError: a background run whose
// execution panicked (a provider's client crashing) was logged and dropped,
// its row left RUNNING for ever: pollers waited on a run nothing executed.
// It is stored ERROR, and the server goes on serving.
func TestBackgroundRun_PanicEndsTheRunInError(t *testing.T) {
	t.Parallel()
	d, err := sqlite.Open(context.Background(), sqlite.Config{Path: filepath.Join(t.TempDir(), "agentry.db"), ID: "test-db"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close() })
	boom, err := agent.New(agent.Config{ID: "boom", Model: panickingModel{info: scripted.Reply("x").Info()}, DB: d})
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(Config{Agents: []*agent.Agent{boom}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)

	res := postForm(t, ts.URL+"/agents/boom/runs", map[string]string{"message": "hi", "background": "true", "stream": "false"}, nil)
	acc := decode[backgroundAccepted](t, res)
	if res.status != 202 {
		t.Fatalf("background = %d %s", res.status, res.body)
	}
	eventually(t, "the run to leave the registry", func() bool { _, ok := s.runs.reg.Lookup(acc.RunID); return !ok })
	row, err := d.GetRun(context.Background(), acc.RunID)
	if err != nil {
		t.Fatal(err)
	}
	if row.Status != run.StatusError {
		t.Fatalf("stored %s after the run panicked, want ERROR", row.Status)
	}
	out, err := row.Output()
	if err != nil || out.ContentString() == "" {
		t.Fatalf("content %v (%v)", out, err)
	}
	// The cancel route finds it over, as any failed run.
	if res := postForm(t, ts.URL+"/agents/boom/runs/"+acc.RunID+"/cancel", nil, nil); res.status != 409 {
		t.Fatalf("cancel = %d %s", res.status, res.body)
	}
}
