package openai_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/agentryhq/agentry/model/openai"
	"github.com/agentryhq/agentry/model/openai/openaitest"
)

// reply is one scripted answer of fakeOpenAI.
type reply struct {
	status  int
	header  map[string]string
	body    string   // sent as is when events is nil
	events  []string // SSE data payloads, each framed as "data: …\n\n" and flushed
	noDone  bool     // leave out the final "data: [DONE]"
	rawTail string   // bytes written after the events (before [DONE])
}

// received is what the server saw of one request.
type received struct {
	path   string
	query  string
	header http.Header
	body   []byte
	at     time.Time
}

// fakeOpenAI is a loopback server speaking Chat Completions on the wire: it
// answers with the scripted replies in order (the last one repeats) and records
// every request.
type fakeOpenAI struct {
	*httptest.Server
	t       *testing.T
	mu      sync.Mutex
	replies []reply
	reqs    []received
}

func newFake(t *testing.T, replies ...reply) *fakeOpenAI {
	t.Helper()
	f := &fakeOpenAI{t: t, replies: replies}
	f.Server = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.Close)
	return f
}

func (f *fakeOpenAI) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	f.reqs = append(f.reqs, received{path: r.URL.Path, query: r.URL.RawQuery, header: r.Header.Clone(), body: body, at: time.Now()})
	n := len(f.reqs)
	rep := f.replies[min(n, len(f.replies))-1]
	f.mu.Unlock()

	if r.Method != http.MethodPost {
		http.Error(w, "method", http.StatusMethodNotAllowed)
		return
	}
	for k, v := range rep.header {
		w.Header().Set(k, v)
	}
	status := rep.status
	if status == 0 {
		status = http.StatusOK
	}
	if rep.events == nil && rep.rawTail == "" {
		if w.Header().Get("Content-Type") == "" {
			w.Header().Set("Content-Type", "application/json")
		}
		w.WriteHeader(status)
		io.WriteString(w, rep.body)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
	w.WriteHeader(status)
	fl := w.(http.Flusher)
	for _, ev := range rep.events {
		io.WriteString(w, "data: "+ev+"\n\n")
		fl.Flush()
	}
	io.WriteString(w, rep.rawTail)
	if !rep.noDone {
		io.WriteString(w, "data: [DONE]\n\n")
	}
	fl.Flush()
}

func (f *fakeOpenAI) requests() []received {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]received(nil), f.reqs...)
}

// only returns the single request the server got, failing otherwise.
func (f *fakeOpenAI) only() received {
	f.t.Helper()
	reqs := f.requests()
	if len(reqs) != 1 {
		f.t.Fatalf("server got %d requests, want 1", len(reqs))
	}
	return reqs[0]
}

// newModel points a Model at f with a fixed key, so tests never read the
// environment.
func newModel(t *testing.T, f *fakeOpenAI) *openai.Model {
	t.Helper()
	m, err := openai.New(openai.Config{APIKey: "sk-test", BaseURL: f.URL + "/v1", Model: "gpt-4o-mini"})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// assertJSON compares a request body (or part of it) with the expected JSON,
// ignoring formatting and key order.
func assertJSON(t *testing.T, got []byte, want string) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("body is not JSON: %v\n%s", err, got)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("bad want JSON: %v", err)
	}
	gb, _ := json.MarshalIndent(g, "", "  ")
	wb, _ := json.MarshalIndent(w, "", "  ")
	if string(gb) != string(wb) {
		t.Fatalf("request JSON mismatch\n got: %s\nwant: %s", gb, wb)
	}
}

// field extracts one top-level field of a JSON body as raw JSON.
func field(t *testing.T, body []byte, name string) []byte {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatalf("body is not a JSON object: %v", err)
	}
	return m[name]
}

// The chunks as OpenAI sends them, shared with the conformance replies.
const (
	chunkRole     = openaitest.ChunkRole
	chunkStop     = openaitest.ChunkStop
	chunkToolStop = openaitest.ChunkToolStop
	chunkUsage    = openaitest.ChunkUsage
)

var (
	chunkContent = openaitest.ChunkContent
	chunkTool    = openaitest.ChunkTool
)
