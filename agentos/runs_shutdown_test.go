package agentos

import (
	"bufio"
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/sqlite"
	"github.com/agentryhq/agentry/model/scripted"
	"github.com/agentryhq/agentry/run"
)

// TestServe_Shutdown starts a real server, starts a streamed and a background
// run on a model slower than the shutdown timeout (or faster, for the control
// case), shuts down, and reads the stored runs.
func TestServe_Shutdown(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name            string
		latency         time.Duration
		shutdownTimeout time.Duration
		want            run.Status
	}{
		{"runs past the timeout are stored CANCELLED", time.Minute, 200 * time.Millisecond, run.StatusCancelled},
		{"runs within the timeout finish", 300 * time.Millisecond, time.Minute, run.StatusCompleted},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			d, err := sqlite.Open(context.Background(), sqlite.Config{Path: filepath.Join(t.TempDir(), "a.db")})
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			m := scripted.MustNew(scripted.Config{Turns: []scripted.Turn{{Content: "done"}}, Latency: tc.latency})
			a, err := agent.New(agent.Config{ID: "slow", Model: m, DB: d})
			if err != nil {
				t.Fatal(err)
			}
			s, err := New(Config{Agents: []*agent.Agent{a}, ShutdownTimeout: tc.shutdownTimeout, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
			if err != nil {
				t.Fatal(err)
			}
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			ctx, stop := context.WithCancel(context.Background())
			served := make(chan error, 1)
			go func() { served <- s.Serve(ctx, ln) }()
			base := "http://" + ln.Addr().String()

			// A streamed run: read its first event, keep the stream open.
			res, err := sendForm(base+"/agents/slow/runs", map[string]string{"message": "go"}, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			streamed := readFirstFrame(t, bufio.NewReader(res.Body)).data["run_id"].(string)
			// A background run, executing.
			bg := decode[map[string]string](t, postForm(t, base+"/agents/slow/runs", map[string]string{"message": "go", "background": "true"}, nil))["run_id"]
			eventually(t, "the background run to start", func() bool { return storedStatus(d, bg) == run.StatusRunning })

			stop()
			if err := <-served; err != nil {
				t.Fatalf("Serve = %v", err)
			}
			for _, id := range []string{streamed, bg} {
				if got := storedStatus(d, id); got != tc.want {
					t.Errorf("run %s stored %s, want %s", id, got, tc.want)
				}
			}
		})
	}
}

func TestServe_DrainingServerRefusesNewRuns(t *testing.T) {
	t.Parallel()
	f := newRunsFixture(t, Config{})
	f.srv.runs.drain()
	res := postForm(t, f.url+"/agents/echo/runs", map[string]string{"message": "hi", "stream": "false"}, nil)
	if res.status != http.StatusServiceUnavailable || res.detail(t) == "" {
		t.Errorf("run while draining = %d %s", res.status, res.body)
	}
	if n := countRuns(t, f.db, db.RunFilter{}); n != 0 {
		t.Errorf("%d runs stored", n)
	}
}
