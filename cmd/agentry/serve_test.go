package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentryhq/agentry/db/sqlite"
	"github.com/agentryhq/agentry/run"
)

// lockedBuffer collects the server's logs from its goroutines.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

var listenAddr = regexp.MustCompile(`msg="agentos listening" addr=(\S+)`)

// startServe runs `agentry serve args…` in-process and returns its base URL
// and a stop function returning the exit code and logs.
func startServe(t *testing.T, args ...string) (string, func() (int, string)) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	logs := &lockedBuffer{}
	done := make(chan int, 1)
	go func() {
		done <- execute(ctx, append([]string{"serve"}, args...), strings.NewReader(""), io.Discard, logs)
	}()
	// A readiness wait, not a timing check: under -race on a loaded CI
	// machine opening the database and the stores has taken over 10 s.
	deadline := time.Now().Add(90 * time.Second)
	for {
		if m := listenAddr.FindStringSubmatch(logs.String()); m != nil {
			stop := func() (int, string) { cancel(); return <-done, logs.String() }
			t.Cleanup(func() { cancel() })
			return "http://" + m[1], stop
		}
		select {
		case code := <-done:
			cancel()
			t.Fatalf("serve exited with %d: %s", code, logs.String())
		default:
		}
		if time.Now().After(deadline) {
			cancel()
			t.Fatalf("serve did not start: %s", logs.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func postRun(t *testing.T, base, agentID string, fields url.Values) (int, map[string]any) {
	t.Helper()
	res, err := http.PostForm(base+"/agents/"+agentID+"/runs", fields)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var body map[string]any
	if err := json.NewDecoder(res.Body).Decode(&body); err != nil {
		t.Fatalf("decode run response: %v", err)
	}
	return res.StatusCode, body
}

func TestServe_DefaultsServeTheDemoAgent(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	dataDir := filepath.Join(dir, "data")
	base, stop := startServe(t, "--port", "0", "--db", filepath.Join(dir, "agentry.db"), "--data-dir", dataDir)

	res, err := http.Get(base + "/health")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 200 {
		t.Fatalf("/health = %d", res.StatusCode)
	}
	status, out := postRun(t, base, demoAgentID, url.Values{"message": {"hi"}, "stream": {"false"}})
	if status != 200 || out["status"] != "COMPLETED" || !strings.HasPrefix(out["content"].(string), "Hello from Agentry") {
		t.Fatalf("run = %d %v", status, out)
	}
	res, err = http.PostForm(base+"/agents/"+demoAgentID+"/runs", url.Values{"message": {"hi"}})
	if err != nil {
		t.Fatal(err)
	}
	stream, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if !strings.HasPrefix(string(stream), "event: RunStarted\ndata: {") || !strings.Contains(string(stream), "event: RunCompleted\n") {
		t.Errorf("stream = %.300s", stream)
	}
	code, logs := stop()
	if code != 0 || !strings.Contains(logs, `msg="http request" method=POST path=/agents/echo/runs status=200`) {
		t.Errorf("exit %d, logs:\n%s", code, logs)
	}
	if fi, err := os.Stat(dataDir); err != nil || !fi.IsDir() {
		t.Errorf("data dir not created: %v", err)
	}
}

func TestServe_ConfigFileFlagsAndShutdownCancelsSlowRuns(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	script := writeFile(t, "slow.yaml", "latency: 1m\nturns:\n  - content: too late\n")
	dbPath := filepath.Join(dir, "from-flag.db")
	cfg := writeFile(t, "agentos.yaml", `server:
  port: 7777
  shutdown_timeout: 200ms
db:
  id: file-db
  dsn: `+filepath.Join(dir, "from-file.db")+`
agents:
  - id: slow
    model: scripted:`+script+`
`)
	// --port and --db override the file.
	base, stop := startServe(t, "--config", cfg, "--port", "0", "--db", dbPath, "--data-dir", filepath.Join(dir, "data"))
	status, acc := postRun(t, base, "slow", url.Values{"message": {"go"}, "background": {"true"}})
	if status != 202 || acc["status"] != "PENDING" {
		t.Fatalf("background run = %d %v", status, acc)
	}
	if status, _ := postRun(t, base, demoAgentID, url.Values{"message": {"hi"}, "stream": {"false"}}); status != 404 {
		t.Errorf("demo agent served next to configured agents: %d", status)
	}
	if code, logs := stop(); code != 0 {
		t.Fatalf("exit %d:\n%s", code, logs)
	}
	d, err := sqlite.Open(context.Background(), sqlite.Config{Path: dbPath})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	row, err := d.GetRun(context.Background(), acc["run_id"].(string))
	if err != nil || row.Status != run.StatusCancelled {
		t.Fatalf("run after shutdown = %+v, %v", row, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "from-file.db")); !os.IsNotExist(err) {
		t.Errorf("the file's dsn was opened despite --db: %v", err)
	}
}

func TestServe_RejectsBadSettings(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	renamed := writeFile(t, "old.yaml", "agents:\n  - id: a\n    model: scripted:x\n    enable_user_memories: true\n")
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"renamed 2.x key", []string{"--config", renamed}, `use "update_memory_on_run"`},
		{"port out of range", []string{"--port", "70000", "--db", filepath.Join(dir, "a.db")}, "out of range"},
		{"unknown log level", []string{"--log-level", "loud", "--db", filepath.Join(dir, "a.db")}, "--log-level"},
		{"unsupported dsn", []string{"--db", "redis://x", "--data-dir", filepath.Join(dir, "d")}, "unsupported"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			code, _, errOut := cli(t, append([]string{"serve"}, tc.args...)...)
			if code == 0 || !strings.Contains(errOut, tc.want) {
				t.Errorf("exit %d, stderr %q, want it to mention %q", code, errOut, tc.want)
			}
		})
	}
}

// TestServe_TracingStoreServesTraces: with tracing.store on, a run of the
// demo agent is stored as a trace that /traces lists, and --prometheus
// counts the run by status and the spans written.
//
// The prompt is the trace's input unless tracing.capture_content is false.
func TestServe_TracingStoreServesTraces(t *testing.T) {
	t.Parallel()
	for name, extra := range map[string]string{"content": "", "no content": "  capture_content: false\n"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			serveTracingStore(t, extra, extra == "")
		})
	}
}

func serveTracingStore(t *testing.T, extra string, wantInput bool) {
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "agentry.yaml")
	if err := os.WriteFile(cfgPath, []byte("tracing:\n  store: true\n  retention_days: 30\n"+extra), 0o600); err != nil {
		t.Fatal(err)
	}
	base, stop := startServe(t, "--port", "0", "--db", filepath.Join(dir, "agentry.db"), "--data-dir", filepath.Join(dir, "data"),
		"--config", cfgPath, "--prometheus")
	status, out := postRun(t, base, demoAgentID, url.Values{"message": {"hi"}, "stream": {"false"}, "user_id": {"u1"}})
	if status != 200 || out["status"] != "COMPLETED" {
		t.Fatalf("run = %d %v", status, out)
	}
	var body string
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		res, err := http.Get(base + "/traces?run_id=" + out["run_id"].(string))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		body = string(b)
		if strings.Contains(body, `"total_count":1`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/traces = %d %s", res.StatusCode, body)
		}
	}
	if !strings.Contains(body, `"name":"invoke_agent Echo"`) || !strings.Contains(body, `"user_id":"u1"`) ||
		strings.Contains(body, `"input":"hi"`) != wantInput {
		t.Errorf("trace (input wanted: %v) %s", wantInput, body)
	}
	res, err := http.Get(base + "/prometheus")
	if err != nil {
		t.Fatal(err)
	}
	prom, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if !strings.Contains(string(prom), `agentry_runs_total{component_id="echo",component_type="agent",status="COMPLETED"} 1`) ||
		!regexp.MustCompile(`agentry_trace_spans_written_total [1-9]`).Match(prom) {
		t.Errorf("/prometheus:\n%s", prom)
	}
	if code, logs := stop(); code != 0 {
		t.Errorf("exit %d: %s", code, logs)
	}
}

// A collector that takes the export's connection and never answers does not
// hold the server's exit past server.shutdown_timeout (the exporter's own
// timeouts and retries would hold it for a minute or more).
func TestServe_StuckCollectorDoesNotHoldTheExit(t *testing.T) {
	release := make(chan struct{})
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer collector.Close()
	defer close(release)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", collector.URL)
	t.Setenv("AGENTRY_SHUTDOWN_TIMEOUT", "1s")
	dir := t.TempDir()
	base, stop := startServe(t, "--port", "0", "--db", filepath.Join(dir, "agentry.db"), "--data-dir", filepath.Join(dir, "data"))
	if status, out := postRun(t, base, demoAgentID, url.Values{"message": {"hi"}, "stream": {"false"}}); status != 200 {
		t.Fatalf("run = %d %v", status, out)
	}
	exited := make(chan int, 1)
	go func() { code, _ := stop(); exited <- code }()
	select {
	case code := <-exited:
		if code != 0 {
			t.Fatalf("exit code %d", code)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the server's exit waited past 30 s on the stuck collector (shutdown_timeout is 1s)")
	}
}
