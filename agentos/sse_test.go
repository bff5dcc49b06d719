package agentos

import (
	"bufio"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/agentryhq/agentry/run"
)

func TestSSEWriter_FramesEventsOverHTTP(t *testing.T) {
	t.Parallel()
	events := []*run.Event{
		{Event: run.EventRunStarted, CreatedAt: 1700000000, AgentID: "a1", AgentName: "A", RunID: "r1", SessionID: "s1", Model: "gpt", ModelProvider: "openai"},
		{Event: run.EventRunContent, CreatedAt: 1700000001, AgentID: "a1", RunID: "r1", SessionID: "s1", Content: "line one\nline <two> & \"three\"", ContentType: "str"},
		{Event: run.EventToolCallStarted, CreatedAt: 1700000002, RunID: "r1", Tool: &run.ToolExecution{ToolCallID: "c1", ToolName: "web_search", ToolArgs: json.RawMessage(`{"q":"go"}`)}},
		{Event: run.EventRunCompleted, CreatedAt: 1700000003, RunID: "r1", SessionID: "s1", Content: "the full content"},
	}
	release := make(chan struct{})
	ts, _ := testServer(t, Config{}, func(s *Server) {
		s.router.Get("/stream", func(w http.ResponseWriter, r *http.Request) {
			sw := newSSEWriter(w)
			if err := sw.WriteEvent(events[0]); err != nil {
				t.Error(err)
				return
			}
			// The first frame must reach the client before the handler goes on.
			select {
			case <-release:
			case <-time.After(5 * time.Second):
				t.Error("first event was not flushed to the client")
				return
			}
			for _, ev := range events[1:] {
				if err := sw.WriteEvent(ev); err != nil {
					t.Error(err)
					return
				}
			}
		})
	})
	res, err := http.Get(ts.URL + "/stream")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if ct := res.Header.Get("Content-Type"); ct != "text/event-stream" || res.Header.Get("Cache-Control") != "no-cache" {
		t.Fatalf("headers = %v", res.Header)
	}
	br := bufio.NewReader(res.Body)
	readFrame := func() (name, data string) {
		t.Helper()
		var lines []string
		for {
			l, err := br.ReadString('\n')
			if err != nil {
				t.Fatalf("read frame: %v (so far %q)", err, lines)
			}
			if l == "\n" {
				break
			}
			lines = append(lines, l)
		}
		if len(lines) != 2 || !strings.HasPrefix(lines[0], "event: ") || !strings.HasPrefix(lines[1], "data: ") {
			t.Fatalf("frame = %q", lines)
		}
		return strings.TrimSuffix(strings.TrimPrefix(lines[0], "event: "), "\n"), strings.TrimSuffix(strings.TrimPrefix(lines[1], "data: "), "\n")
	}
	for i, want := range events {
		name, data := readFrame()
		if i == 0 {
			close(release)
		}
		if name != string(want.Event) {
			t.Errorf("frame %d name = %q, want %s", i, name, want.Event)
		}
		var obj map[string]any
		if err := json.Unmarshal([]byte(data), &obj); err != nil {
			t.Fatalf("frame %d data is not JSON: %v", i, err)
		}
		if obj["event"] != string(want.Event) {
			t.Errorf("frame %d JSON event = %v", i, obj["event"])
		}
		if _, ok := obj["data"]; ok {
			t.Errorf("frame %d has a top-level data key", i)
		}
		if strings.Contains(data, "null") {
			t.Errorf("frame %d has a null: %s", i, data)
		}
		if _, ok := obj["created_at"].(float64); !ok {
			t.Errorf("frame %d created_at = %v, want an integer", i, obj["created_at"])
		}
		if i == 1 && (obj["content"] != want.Content || strings.Contains(data, `\u003c`)) {
			t.Errorf("content round trip: %s", data)
		}
		if i == 2 && !strings.Contains(data, `"tool":{"tool_call_id":"c1","tool_name":"web_search","tool_args":{"q":"go"}}`) {
			t.Errorf("tool frame = %s", data)
		}
	}
	if l, err := br.ReadString('\n'); err == nil {
		t.Errorf("unexpected trailing data %q", l)
	}
}

func TestSSEWriter_RejectsUnnamedEventsBeforeStarting(t *testing.T) {
	t.Parallel()
	ts, _ := testServer(t, Config{}, func(s *Server) {
		s.router.Get("/bad", func(w http.ResponseWriter, r *http.Request) {
			sw := newSSEWriter(w)
			for _, ev := range []*run.Event{nil, {}, {Event: "Run\nStarted"}} {
				if err := sw.WriteEvent(ev); err == nil {
					t.Errorf("WriteEvent(%+v) accepted", ev)
				}
			}
			if sw.Started() {
				t.Error("stream started by a rejected event")
			}
			writeError(w, http.StatusBadRequest, "no stream")
		})
		s.router.Get("/ping", func(w http.ResponseWriter, r *http.Request) {
			sw := newSSEWriter(w)
			_ = sw.Comment("keep\nalive")
		})
	})
	if res := get(t, ts.URL+"/bad", nil); res.status != 400 || res.detail(t) != "no stream" {
		t.Errorf("= %d %s", res.status, res.body)
	}
	if res := get(t, ts.URL+"/ping", nil); res.body != ": keep alive\n\n" || res.header.Get("Content-Type") != "text/event-stream" {
		t.Errorf("comment frame = %q", res.body)
	}
}

// flushCounter counts flushes of a recorded response.
type flushCounter struct {
	*httptest.ResponseRecorder
	flushes int
}

func (f *flushCounter) Flush() { f.flushes++; f.ResponseRecorder.Flush() }

func TestSSEWriter_FirstFrameGoesOutWithTheHeaders(t *testing.T) {
	t.Parallel()
	rec := &flushCounter{ResponseRecorder: httptest.NewRecorder()}
	sse := newSSEWriter(rec)
	if err := sse.WriteEvent(&run.Event{Event: run.EventRunStarted, RunID: "r"}); err != nil {
		t.Fatal(err)
	}
	if rec.flushes != 1 || rec.Code != http.StatusOK || rec.Header().Get("Content-Type") != "text/event-stream" {
		t.Fatalf("flushes %d, status %d, content type %q", rec.flushes, rec.Code, rec.Header().Get("Content-Type"))
	}
	if err := sse.WriteEvent(&run.Event{Event: run.EventRunCompleted, RunID: "r"}); err != nil {
		t.Fatal(err)
	}
	if rec.flushes != 2 {
		t.Fatalf("flushes after two events = %d, want 2", rec.flushes)
	}
}
