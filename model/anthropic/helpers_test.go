package anthropic

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/agentryhq/agentry/model"
)

// sseEvent renders one event exactly as the Messages API sends it.
func sseEvent(name, data string) string {
	return "event: " + name + "\ndata: " + data + "\n\n"
}

func sseStream(events ...string) string { return strings.Join(events, "") }

// Frames shared by the stream fixtures, copied from real Messages API streams.
const (
	testModelID = "claude-sonnet-4-5-20250929"
	frameStart  = `{"type":"message_start","message":{"id":"msg_01XFDUDYJgAACzvnptvVoYEL","type":"message","role":"assistant","model":"claude-sonnet-4-5-20250929","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":472,"cache_creation_input_tokens":12,"cache_read_input_tokens":300,"output_tokens":2}}}`
	framePing   = `{"type": "ping"}`
	frameStop   = `{"type":"message_stop"}`
)

func msgStart() string { return sseEvent("message_start", frameStart) }
func ping() string     { return sseEvent("ping", framePing) }
func msgStop() string  { return sseEvent("message_stop", frameStop) }

func blockStart(index int, block string) string {
	return sseEvent("content_block_start", `{"type":"content_block_start","index":`+itoa(index)+`,"content_block":`+block+`}`)
}

func blockDelta(index int, delta string) string {
	return sseEvent("content_block_delta", `{"type":"content_block_delta","index":`+itoa(index)+`,"delta":`+delta+`}`)
}

func blockStop(index int) string {
	return sseEvent("content_block_stop", `{"type":"content_block_stop","index":`+itoa(index)+`}`)
}

func textDelta(index int, s string) string {
	b, _ := json.Marshal(s)
	return blockDelta(index, `{"type":"text_delta","text":`+string(b)+`}`)
}

func jsonDelta(index int, partial string) string {
	b, _ := json.Marshal(partial)
	return blockDelta(index, `{"type":"input_json_delta","partial_json":`+string(b)+`}`)
}

func msgDelta(stop string, outputTokens int) string {
	return sseEvent("message_delta", `{"type":"message_delta","delta":{"stop_reason":"`+stop+`","stop_sequence":null},"usage":{"output_tokens":`+itoa(outputTokens)+`}}`)
}

func itoa(i int) string {
	b, _ := json.Marshal(i)
	return string(b)
}

// reply is one canned HTTP answer of the fake API.
type reply struct {
	status int
	header map[string]string
	body   string
}

func sseReply(body string) reply {
	return reply{status: 200, header: map[string]string{"content-type": "text/event-stream; charset=utf-8"}, body: body}
}

func jsonReply(status int, body string) reply {
	return reply{status: status, header: map[string]string{"content-type": "application/json"}, body: body}
}

// fakeAPI is a loopback Messages API answering with canned replies in order
// (the last one repeats) and recording every request.
type fakeAPI struct {
	t       *testing.T
	srv     *httptest.Server
	mu      sync.Mutex
	replies []reply
	reqs    []recorded
}

type recorded struct {
	path   string
	header http.Header
	body   map[string]any
}

func newFakeAPI(t *testing.T, replies ...reply) *fakeAPI {
	t.Helper()
	f := &fakeAPI{t: t, replies: replies}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeAPI) serve(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(r.Body)
	var body map[string]any
	if err := json.Unmarshal(raw, &body); err != nil {
		f.t.Errorf("request body is not JSON: %v: %s", err, raw)
	}
	f.mu.Lock()
	f.reqs = append(f.reqs, recorded{path: r.URL.Path, header: r.Header.Clone(), body: body})
	rep := f.replies[min(len(f.reqs), len(f.replies))-1]
	f.mu.Unlock()
	for k, v := range rep.header {
		w.Header().Set(k, v)
	}
	w.WriteHeader(rep.status)
	_, _ = io.WriteString(w, rep.body)
}

func (f *fakeAPI) requests() []recorded {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]recorded(nil), f.reqs...)
}

func (f *fakeAPI) lastBody() map[string]any {
	f.t.Helper()
	reqs := f.requests()
	if len(reqs) == 0 {
		f.t.Fatal("no request reached the fake API")
	}
	return reqs[len(reqs)-1].body
}

func (f *fakeAPI) model(t *testing.T) *Model {
	t.Helper()
	m, err := New(Config{APIKey: "sk-ant-test", BaseURL: f.srv.URL, Model: "claude-sonnet-4-5", Beta: []string{"interleaved-thinking-2025-05-14"}})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return m
}

// drain collects a stream into chunks, the accumulated response and the error.
func drain(t *testing.T, m model.Model, req *model.Request) ([]*model.Chunk, *model.Response, error) {
	t.Helper()
	var (
		acc    model.Accumulator
		chunks []*model.Chunk
	)
	for c, err := range m.Stream(context.Background(), req) {
		if err != nil {
			return chunks, acc.Response(), err
		}
		chunks = append(chunks, c)
		acc.Add(c)
	}
	return chunks, acc.Response(), nil
}

// jsonOf re-encodes a decoded value for compact comparison.
func jsonOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func userReq(text string) *model.Request {
	return &model.Request{Messages: []model.Message{model.Text(model.RoleUser, text)}}
}
