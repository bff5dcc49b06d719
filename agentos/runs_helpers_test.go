package agentos

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"iter"
	"log/slog"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/sqlite"
	"github.com/agentryhq/agentry/model"
	"github.com/agentryhq/agentry/model/scripted"
	"github.com/agentryhq/agentry/run"
	"github.com/agentryhq/agentry/tool"
)

// recordingModel remembers the messages of the last request it answered.
type recordingModel struct {
	model.Model
	mu   sync.Mutex
	last []model.Message
}

func (m *recordingModel) record(req *model.Request) {
	m.mu.Lock()
	m.last = req.Collect()
	m.mu.Unlock()
}

func (m *recordingModel) Invoke(ctx context.Context, req *model.Request) (*model.Response, error) {
	m.record(req)
	return m.Model.Invoke(ctx, req)
}

func (m *recordingModel) Stream(ctx context.Context, req *model.Request) iter.Seq2[*model.Chunk, error] {
	m.record(req)
	return m.Model.Stream(ctx, req)
}

// lastMessages is the text of every message of the last request.
func (m *recordingModel) lastMessages() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]string, 0, len(m.last))
	for _, msg := range m.last {
		out = append(out, string(msg.Role)+":"+msg.Content)
	}
	return out
}

// runsFixture serves four agents on a SQLite file:
//   - echo answers "hi there" and adds history to the context (recorded);
//   - slow waits a minute before answering (until cancelled);
//   - hitl calls delete_file, which needs confirmation, then says "all done";
//   - nodb has no database.
type runsFixture struct {
	url      string
	srv      *Server
	db       *db.DB
	echo     *recordingModel
	executed *atomic.Int32
}

func newRunsFixture(t *testing.T, cfg Config) *runsFixture {
	t.Helper()
	d, err := sqlite.Open(context.Background(), sqlite.Config{Path: filepath.Join(t.TempDir(), "agentry.db"), ID: "test-db"})
	if err != nil {
		t.Fatal(err)
	}
	f := &runsFixture{db: d, echo: &recordingModel{Model: scripted.Reply("hi there")}, executed: &atomic.Int32{}}
	del := tool.MustFunc(tool.FuncConfig{Name: "delete_file", Description: "Deletes a file.", RequiresConfirmation: true},
		func(context.Context, struct{}) (string, error) { f.executed.Add(1); return "deleted", nil })
	hitl := scripted.MustNew(scripted.Config{Turns: []scripted.Turn{
		{ToolCalls: []scripted.ToolCall{{Name: "delete_file"}}},
		{Content: "all done"},
	}})
	slow := scripted.MustNew(scripted.Config{Turns: []scripted.Turn{{Content: "finally"}}, Latency: time.Minute})
	for _, c := range []agent.Config{
		{ID: "echo", Name: "Echo", Model: f.echo, DB: d, AddHistoryToContext: true},
		{ID: "slow", Name: "Slow", Model: slow, DB: d},
		{ID: "hitl", Name: "HITL", Model: hitl, DB: d, Tools: []tool.Tool{del}},
		{ID: "nodb", Name: "No DB", Model: scripted.Reply("ok")},
	} {
		a, err := agent.New(c)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Agents = append(cfg.Agents, a)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	f.srv = s
	ts := httptest.NewServer(s.Handler())
	f.url = ts.URL
	// Cleanups run last-registered first: stop runs, then the listener, then
	// the database (before TempDir removes it).
	t.Cleanup(func() { _ = d.Close() })
	t.Cleanup(ts.Close)
	t.Cleanup(func() {
		s.runs.stop(errServerShutdown)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if !s.runs.wait(ctx) {
			t.Error("runs still in flight after cleanup")
		}
	})
	return f
}

// form encodes fields as application/x-www-form-urlencoded.
func form(fields map[string]string) (io.Reader, map[string]string) {
	v := url.Values{}
	for k, val := range fields {
		v.Set(k, val)
	}
	return strings.NewReader(v.Encode()), map[string]string{"Content-Type": "application/x-www-form-urlencoded"}
}

// multipartForm encodes fields (and files name → content) as multipart/form-data.
func multipartForm(t *testing.T, fields map[string]string, files map[string]string) (io.Reader, map[string]string) {
	t.Helper()
	var b strings.Builder
	mw := multipart.NewWriter(&b)
	for k, v := range fields {
		if err := mw.WriteField(k, v); err != nil {
			t.Fatal(err)
		}
	}
	for name, content := range files {
		h := make(map[string][]string)
		h["Content-Disposition"] = []string{`form-data; name="files"; filename="` + name + `"`}
		h["Content-Type"] = []string{"text/plain"}
		if strings.HasSuffix(name, ".png") {
			h["Content-Type"] = []string{"image/png"}
		}
		w, err := mw.CreatePart(h)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.WriteString(w, content)
	}
	if err := mw.Close(); err != nil {
		t.Fatal(err)
	}
	return strings.NewReader(b.String()), map[string]string{"Content-Type": mw.FormDataContentType()}
}

func postForm(t *testing.T, u string, fields map[string]string, extra map[string]string) response {
	t.Helper()
	body, hdr := form(fields)
	for k, v := range extra {
		hdr[k] = v
	}
	return do(t, http.MethodPost, u, body, hdr)
}

// sendForm posts fields urlencoded, with extra headers, and returns the
// response with its body unread (streams, goroutines that must not t.Fatal).
func sendForm(u string, fields, extra map[string]string) (*http.Response, error) {
	body, hdr := form(fields)
	req, err := http.NewRequest(http.MethodPost, u, body)
	if err != nil {
		return nil, err
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	for k, v := range extra {
		req.Header.Set(k, v)
	}
	return http.DefaultClient.Do(req)
}

// sseFrame is one parsed event frame.
type sseFrame struct {
	name string
	data map[string]any
	raw  string
}

// parseSSE splits a complete event stream into frames, failing on any frame
// that is not "event: X\ndata: JSON".
func parseSSE(t *testing.T, body string) []sseFrame {
	t.Helper()
	var frames []sseFrame
	for _, block := range strings.Split(strings.TrimSuffix(body, "\n\n"), "\n\n") {
		if block == "" {
			continue
		}
		name, data, ok := strings.Cut(block, "\n")
		if !ok || !strings.HasPrefix(name, "event: ") || !strings.HasPrefix(data, "data: ") || strings.Contains(data, "\n") {
			t.Fatalf("malformed SSE frame %q", block)
		}
		fr := sseFrame{name: strings.TrimPrefix(name, "event: "), raw: strings.TrimPrefix(data, "data: ")}
		if err := json.Unmarshal([]byte(fr.raw), &fr.data); err != nil {
			t.Fatalf("frame data %q: %v", fr.raw, err)
		}
		frames = append(frames, fr)
	}
	return frames
}

// readFirstFrame reads one SSE frame from a live stream.
func readFirstFrame(t *testing.T, br *bufio.Reader) sseFrame {
	t.Helper()
	var lines []string
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("reading stream: %v", err)
		}
		if line == "\n" {
			break
		}
		lines = append(lines, line)
	}
	return parseSSE(t, strings.Join(lines, "")+"\n")[0]
}

// eventually polls cond every few milliseconds until it holds or 10 s pass.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// storedStatus is the stored status of a run ("" when missing).
func storedStatus(d *db.DB, runID string) run.Status {
	row, err := d.GetRun(context.Background(), runID)
	if err != nil {
		return ""
	}
	return row.Status
}

// countRuns counts every stored run.
func countRuns(t *testing.T, d *db.DB, f db.RunFilter) int {
	t.Helper()
	f.Limit, f.Page = 1000, 1
	rows, _, err := d.GetRuns(context.Background(), f)
	if err != nil {
		t.Fatal(err)
	}
	return len(rows)
}
