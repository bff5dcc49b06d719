package agentos

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"iter"
	"log/slog"
	"net"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/db/sqlite"
	"github.com/agentryhq/agentry/model"
	"github.com/agentryhq/agentry/model/scripted"
	"github.com/agentryhq/agentry/run"
)

// floodModel streams 64 KiB chunks until its context ends, counting them.
type floodModel struct {
	info   model.Info
	chunks *atomic.Int64
}

func (m floodModel) Info() model.Info { return m.info }

func (m floodModel) Invoke(ctx context.Context, req *model.Request) (*model.Response, error) {
	return nil, fmt.Errorf("floodModel streams only")
}

func (m floodModel) Stream(ctx context.Context, _ *model.Request) iter.Seq2[*model.Chunk, error] {
	return func(yield func(*model.Chunk, error) bool) {
		piece := strings.Repeat("x", 64<<10)
		for ctx.Err() == nil {
			m.chunks.Add(1)
			if !yield(&model.Chunk{Content: piece}, nil) {
				return
			}
		}
		yield(nil, ctx.Err())
	}
}

// TestStreamRun_CancelReachesARunWhoseClientStoppedReading: a streamed
// run whose client stopped reading (its connection open, its window
// full) was blocked writing a frame, where nothing it listens to could
// reach it: the cancel route answered 202 and the run stayed RUNNING, in
// the registry, its goroutine held, for as long as the client kept the
// connection. Its cancellation now ends the blocked write, and the run is
// stored CANCELLED.
func TestStreamRun_CancelReachesARunWhoseClientStoppedReading(t *testing.T) {
	t.Parallel()
	d, err := sqlite.Open(context.Background(), sqlite.Config{Path: filepath.Join(t.TempDir(), "agentry.db"), ID: "test-db"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close() })
	var chunks atomic.Int64
	a, err := agent.New(agent.Config{ID: "flood", Model: floodModel{info: scripted.Reply("x").Info(), chunks: &chunks}, DB: d})
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(Config{Agents: []*agent.Agent{a}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	s.cancelTimeout = 3 * time.Second
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)

	u, _ := url.Parse(ts.URL)
	conn, err := net.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	_ = conn.(*net.TCPConn).SetReadBuffer(4 << 10)
	body := "message=go&stream=true"
	fmt.Fprintf(conn, "POST /agents/flood/runs HTTP/1.1\r\nHost: %s\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: %d\r\n\r\n%s", u.Host, len(body), body)
	// Read up to the run id in RunStarted, then nothing more.
	br := bufio.NewReaderSize(conn, 4<<10)
	var runID string
	for runID == "" {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if _, rest, ok := strings.Cut(line, `"run_id":"`); ok {
			runID, _, _ = strings.Cut(rest, `"`)
		}
	}
	// The server fills the connection and blocks writing.
	var last int64 = -1
	eventually(t, "the stream to block", func() bool {
		time.Sleep(200 * time.Millisecond)
		n := chunks.Load()
		stalled := n == last
		last = n
		return stalled
	})

	res := postForm(t, ts.URL+"/agents/flood/runs/"+runID+"/cancel", nil, nil)
	if res.status != 200 || !strings.Contains(res.body, `"status":"CANCELLED"`) {
		t.Fatalf("cancel = %d %s", res.status, res.body)
	}
	if st := storedStatus(d, runID); st != run.StatusCancelled {
		t.Fatalf("stored %q, want CANCELLED", st)
	}
	if _, ok := s.runs.reg.Lookup(runID); ok {
		t.Fatal("the run is still in the registry")
	}
}
