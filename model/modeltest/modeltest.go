package modeltest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentryhq/agentry/model"
)

// Scenario names one canonical exchange. A provider's Reply answers each with
// the bytes its API would send; the comment says what those bytes must carry.
type Scenario string

const (
	// Text: the assistant says "Hello, world." (streamed in at least two
	// content pieces) with the usage the Provider's Usage field normalises.
	Text Scenario = "text"
	// ToolCall: one call get_weather({"city":"Paris"}) with a call id; streamed,
	// the arguments arrive in at least two fragments.
	ToolCall Scenario = "tool_call"
	// ParallelToolCalls: get_weather for Paris, then for Lyon, in one turn, each
	// with its own id (streamed interleaved or one after the other).
	ParallelToolCalls Scenario = "parallel_tool_calls"
	// StructuredOutput: the answer to a request carrying a ResponseFormat is the
	// JSON {"city":"Paris","temp_c":21}, however the provider transports it.
	StructuredOutput Scenario = "structured_output"
	// RateLimited: HTTP 429 with "Retry-After: 7" and the provider's error body.
	RateLimited Scenario = "rate_limited"
	// ServerError: HTTP 503 (or the provider's overloaded status) and its body.
	ServerError Scenario = "server_error"
	// ContextLength: the provider's "prompt too long" error.
	ContextLength Scenario = "context_length"
	// Unauthorized: the provider's answer to credentials it refuses (a wrong
	// API key), with the status and body its API sends for that.
	Unauthorized Scenario = "unauthorized"
	// MalformedChunk: a stream whose second event cannot be decoded.
	MalformedChunk Scenario = "malformed_chunk"
	// TruncatedStream: a stream that carries some content, then ends without the
	// provider's end-of-stream marker.
	TruncatedStream Scenario = "truncated_stream"
	// Hang: a stream that sends one content piece ("Hello") and then nothing
	// until the client goes away.
	Hang Scenario = "hang"
	// StreamError: a stream that sends one content piece ("Hello"), then the
	// provider's server error (overloaded, internal) as its API sends one
	// inside a 200 stream.
	StreamError Scenario = "stream_error"
)

// Reply is one HTTP answer of the loopback server.
type Reply struct {
	// Status defaults to 200.
	Status int
	Header http.Header
	// Parts are written in order, each flushed on its own, so a stream arrives
	// in pieces as it does from the real API.
	Parts [][]byte
}

// Provider adapts one provider to the suite.
type Provider struct {
	// New builds the model pointed at baseURL. client, when not nil, is the
	// HTTP client the model must send with (its config's HTTPClient): the
	// suite passes one to stand for a host name that does not resolve.
	New func(t *testing.T, baseURL string, client *http.Client) model.Model
	// Reply answers scenario s to request r (body already read). It tells a
	// streaming request from a non-streaming one the way its API does (a path,
	// a body field) and may check the request with t.Errorf.
	Reply func(t *testing.T, s Scenario, r *http.Request, body []byte) Reply
	// Usage is what the Text scenario's usage normalises to (Agno's meaning:
	// input, output, total, cache read/write, reasoning tokens).
	Usage model.Usage
	// WholeToolCalls says the API streams each tool call complete in one
	// event (Gemini), so argument fragments are not expected.
	WholeToolCalls bool
}

// WeatherTool is the tool every tool scenario offers.
var WeatherTool = model.ToolSpec{
	Name:        "get_weather",
	Description: "Current weather for a city",
	Parameters:  json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`),
}

// WeatherFormat is the ResponseFormat of the StructuredOutput scenario.
var WeatherFormat = &model.ResponseFormat{
	Name:   "weather",
	Schema: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"},"temp_c":{"type":"integer"}},"required":["city","temp_c"],"additionalProperties":false}`),
	Strict: true,
}

// Request is the request the suite sends for a scenario.
func Request(s Scenario) *model.Request {
	req := &model.Request{Messages: []model.Message{
		{Role: model.RoleSystem, Content: "You are terse."},
		{Role: model.RoleUser, Content: "What is the weather in Paris?"},
	}}
	switch s {
	case ToolCall, ParallelToolCalls:
		req.Tools = []model.ToolSpec{WeatherTool}
	case StructuredOutput:
		req.ResponseFormat = WeatherFormat
	}
	return req
}

// Run checks p against every scenario, Invoke and Stream alike.
func Run(t *testing.T, p Provider) {
	t.Helper()
	both := func(name string, s Scenario, check func(t *testing.T, r *model.Response, chunks []*model.Chunk, err error, streamed bool)) {
		for _, streamed := range []bool{false, true} {
			mode := "Invoke"
			if streamed {
				mode = "Stream"
			}
			t.Run(mode+"/"+name, func(t *testing.T) {
				t.Parallel()
				srv := serve(t, p, s)
				m := p.New(t, srv.URL, nil)
				r, chunks, err := call(t, m, Request(s), streamed)
				check(t, r, chunks, err, streamed)
			})
		}
	}

	both("Text", Text, func(t *testing.T, r *model.Response, chunks []*model.Chunk, err error, streamed bool) {
		mustOK(t, err)
		if r.Message.Content != "Hello, world." {
			t.Errorf("content %q, want %q", r.Message.Content, "Hello, world.")
		}
		if r.Message.Role != model.RoleAssistant {
			t.Errorf("role %q, want assistant", r.Message.Role)
		}
		if r.Usage != p.Usage {
			t.Errorf("usage %+v, want %+v", r.Usage, p.Usage)
		}
		if streamed && !p.WholeToolCalls && count(chunks, func(c *model.Chunk) bool { return c.Content != "" }) < 2 {
			t.Errorf("content arrived in fewer than two chunks: a stream must yield pieces as they come")
		}
	})
	both("ToolCall", ToolCall, func(t *testing.T, r *model.Response, chunks []*model.Chunk, err error, streamed bool) {
		mustOK(t, err)
		calls := r.Message.ToolCalls
		if len(calls) != 1 {
			t.Fatalf("got %d tool calls, want 1: %+v", len(calls), calls)
		}
		checkCall(t, calls[0], "Paris")
		if streamed && !p.WholeToolCalls && count(chunks, func(c *model.Chunk) bool {
			for _, d := range c.ToolCalls {
				if d.Arguments != "" {
					return true
				}
			}
			return false
		}) < 2 {
			t.Errorf("tool arguments arrived in fewer than two chunks: deltas must be streamed")
		}
	})
	both("ParallelToolCalls", ParallelToolCalls, func(t *testing.T, r *model.Response, _ []*model.Chunk, err error, _ bool) {
		mustOK(t, err)
		calls := r.Message.ToolCalls
		if len(calls) != 2 {
			t.Fatalf("got %d tool calls, want 2: %+v", len(calls), calls)
		}
		checkCall(t, calls[0], "Paris")
		checkCall(t, calls[1], "Lyon")
		if calls[0].ID == calls[1].ID {
			t.Errorf("both calls have id %q; results are matched to calls by id", calls[0].ID)
		}
	})
	both("StructuredOutput", StructuredOutput, func(t *testing.T, r *model.Response, _ []*model.Chunk, err error, _ bool) {
		mustOK(t, err)
		var got, want any
		if err := json.Unmarshal([]byte(r.Message.Content), &got); err != nil {
			t.Fatalf("content %q is not JSON: %v", r.Message.Content, err)
		}
		_ = json.Unmarshal([]byte(`{"city":"Paris","temp_c":21}`), &want)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("content %s, want {\"city\":\"Paris\",\"temp_c\":21}", r.Message.Content)
		}
		if len(r.Message.ToolCalls) != 0 {
			t.Errorf("structured output surfaced as tool calls %+v", r.Message.ToolCalls)
		}
	})
	both("RateLimitedWithRetryAfter", RateLimited, func(t *testing.T, _ *model.Response, _ []*model.Chunk, err error, _ bool) {
		if !errors.Is(err, model.ErrRateLimit) {
			t.Fatalf("error %v, want model.ErrRateLimit", err)
		}
		var pe *model.ProviderError
		if !errors.As(err, &pe) || pe.RetryAfter != 7*time.Second {
			t.Errorf("RetryAfter of %v is not 7s: %#v", err, pe)
		}
		if !model.Retryable(err) {
			t.Errorf("a rate limit must be retryable")
		}
	})
	both("ServerError", ServerError, func(t *testing.T, _ *model.Response, _ []*model.Chunk, err error, _ bool) {
		if !errors.Is(err, model.ErrServer) || !model.Retryable(err) {
			t.Fatalf("error %v, want retryable model.ErrServer", err)
		}
	})
	both("Unauthorized", Unauthorized, func(t *testing.T, _ *model.Response, _ []*model.Chunk, err error, _ bool) {
		if !errors.Is(err, model.ErrAuth) || model.Retryable(err) {
			t.Fatalf("error %v, want non-retryable model.ErrAuth", err)
		}
	})
	both("ContextLength", ContextLength, func(t *testing.T, _ *model.Response, _ []*model.Chunk, err error, _ bool) {
		if !errors.Is(err, model.ErrContextLength) || model.Retryable(err) {
			t.Fatalf("error %v, want non-retryable model.ErrContextLength", err)
		}
	})
	for _, s := range []Scenario{MalformedChunk, TruncatedStream} {
		t.Run("Stream/"+string(s), func(t *testing.T) {
			t.Parallel()
			srv := serve(t, p, s)
			_, _, err := call(t, p.New(t, srv.URL, nil), Request(s), true)
			if !errors.Is(err, model.ErrMalformedResponse) {
				t.Fatalf("error %v, want model.ErrMalformedResponse", err)
			}
		})
	}
	t.Run("Stream/ServerErrorInsideTheStream", func(t *testing.T) {
		t.Parallel()
		srv := serve(t, p, StreamError)
		r, _, err := call(t, p.New(t, srv.URL, nil), Request(StreamError), true)
		if !errors.Is(err, model.ErrServer) || !model.Retryable(err) {
			t.Fatalf("error %v, want a retryable model.ErrServer, not a malformed stream", err)
		}
		if r == nil || r.Message.Content != "Hello" {
			t.Errorf("content before the error %+v, want %q", r, "Hello")
		}
	})
	t.Run("Stream/ContextCancellation", func(t *testing.T) {
		t.Parallel()
		srv := serve(t, p, Hang)
		m := p.New(t, srv.URL, nil)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		var err error
		got := ""
		done := make(chan struct{})
		go func() {
			defer close(done)
			for c, e := range m.Stream(ctx, Request(Hang)) {
				if e != nil {
					err = e
					return
				}
				got += c.Content
				if got != "" {
					cancel()
				}
			}
		}()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatal("stream did not end within 10s of its context being cancelled")
		}
		if got != "Hello" {
			t.Errorf("content before cancelling %q, want %q", got, "Hello")
		}
		if !errors.Is(err, context.Canceled) {
			t.Errorf("error %v, want context.Canceled", err)
		}
	})
	t.Run("Stream/BreakClosesConnection", func(t *testing.T) {
		t.Parallel()
		srv := serve(t, p, Hang)
		m := p.New(t, srv.URL, nil)
		for c, err := range m.Stream(context.Background(), Request(Hang)) {
			if err != nil {
				t.Fatal(err)
			}
			if c.Content != "" {
				break
			}
		}
		select {
		case <-srv.gone:
		case <-time.After(10 * time.Second):
			t.Fatal("the server still holds the request 10s after the caller broke out of the stream")
		}
	})
	for _, streamed := range []bool{false, true} {
		mode := "Invoke"
		if streamed {
			mode = "Stream"
		}
		t.Run(mode+"/HistoryReachesTheWireInOrder", func(t *testing.T) {
			t.Parallel()
			checkHistory(t, p, streamed)
		})
	}
	checkUnreachable(t, p)
	t.Run("Invoke/ContextCancelledBeforeCall", func(t *testing.T) {
		t.Parallel()
		srv := serve(t, p, Text)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err := p.New(t, srv.URL, nil).Invoke(ctx, Request(Text))
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("error %v, want context.Canceled", err)
		}
	})
}

// RefusedAddr is a loopback host:port nothing listens on: a connection to it
// is refused. Where it can (unix), the port stays bound by a socket that
// never listens until the test ends, so that no other test or process on
// the machine takes it meanwhile (a port merely closed was, once, and the
// connection reached a server).
func RefusedAddr(t testing.TB) string {
	t.Helper()
	if addr, ok := boundNotListening(t); ok {
		return addr
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// checkUnreachable: a request that gets no answer at all (a host name that
// does not resolve, a refused connection) fails with model.ErrUnreachable,
// not model.ErrServer (no provider server was reached), naming what failed,
// with the cause kept; a name that does not exist is not worth a retry, a
// refused connection is.
func checkUnreachable(t *testing.T, p Provider) {
	refused := RefusedAddr(t)
	cases := []struct {
		name, base string
		noSuchHost bool // sent through a client whose dial finds no such host
		want       string
		retryable  bool
	}{
		{"NoSuchHost", "https://llm.example.test", true, "cannot resolve host llm.example.test", false},
		{"ConnectionRefused", "http://" + refused, false, "connection to " + refused + " refused", true},
	}
	for _, tc := range cases {
		for _, streamed := range []bool{false, true} {
			mode := "Invoke"
			if streamed {
				mode = "Stream"
			}
			t.Run(mode+"/Unreachable/"+tc.name, func(t *testing.T) {
				t.Parallel()
				var client *http.Client
				var dialed atomic.Bool // the model sent with the client it was given
				if tc.noSuchHost {
					client = &http.Client{Transport: &http.Transport{DialContext: func(_ context.Context, _, addr string) (net.Conn, error) {
						dialed.Store(true)
						host, _, _ := net.SplitHostPort(addr)
						return nil, &net.OpError{Op: "dial", Net: "tcp", Err: &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}}
					}}}
				}
				_, _, err := call(t, p.New(t, tc.base, client), Request(Text), streamed)
				if tc.noSuchHost && !dialed.Load() {
					t.Fatalf("the model did not send with the HTTP client New was given (error %v)", err)
				}
				if !errors.Is(err, model.ErrUnreachable) || errors.Is(err, model.ErrServer) || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("error %v, want model.ErrUnreachable (not ErrServer) saying %q", err, tc.want)
				}
				if model.Retryable(err) != tc.retryable {
					t.Errorf("Retryable = %v, want %v", !tc.retryable, tc.retryable)
				}
				var dns *net.DNSError
				if tc.noSuchHost && !errors.As(err, &dns) {
					t.Errorf("error %v does not keep its cause, a *net.DNSError", err)
				}
			})
		}
	}
}

// HistoryConversation is the conversation of the history check: a system
// message, an earlier turn with a tool call (and an image), then the new
// user message. Each message's text carries a marker, [h0] to [m5], in the
// order the messages are sent.
func HistoryConversation() []model.Message {
	return []model.Message{
		{Role: model.RoleSystem, Content: "You are terse. [h0]"},
		{Role: model.RoleUser, Content: "What is the weather in Paris? [h1]", FromHistory: true,
			Parts: []model.Part{{Type: model.PartImage, Data: []byte("\x89PNG\r\n\x1a\nfixture"), MIMEType: "image/png"}}},
		{Role: model.RoleAssistant, Content: "Let me check. [h2]", FromHistory: true,
			ToolCalls: []model.ToolCall{{ID: "call_h2", Name: "get_weather", Arguments: `{"city":"Paris"}`}}},
		{Role: model.RoleTool, ToolCallID: "call_h2", ToolName: "get_weather", Content: "Sunny, 21C [h3]", FromHistory: true},
		{Role: model.RoleAssistant, Content: "It is sunny in Paris. [h4]", FromHistory: true},
		{Role: model.RoleUser, Content: "And in Lyon? [m5]"},
	}
}

// HistoryRequest is HistoryConversation as an agent sends it: the system
// message and the earlier turn in History (three segments), the new user
// message in Messages.
func HistoryRequest(conv []model.Message) *model.Request {
	return &model.Request{
		History:  model.NewHistory(conv[0:1], conv[1:3], conv[3:5]),
		Messages: conv[5:],
		Tools:    []model.ToolSpec{WeatherTool},
	}
}

// checkHistory sends HistoryConversation twice with its history in
// Request.History and once all in Messages: the three bodies must be the
// same, carry the markers (the turns' in order), and the history must come
// back unchanged.
func checkHistory(t *testing.T, p Provider, streamed bool) {
	srv := serve(t, p, Text)
	m := p.New(t, srv.URL, nil)
	if !model.ReadsHistory(m) {
		// It would still be correct (the agent copies the history into
		// Messages for it) but pay that copy on every call.
		t.Errorf("%T does not implement model.HistoryReader", m)
	}
	conv := HistoryConversation()
	split := HistoryRequest(conv)
	flat := &model.Request{Messages: HistoryConversation(), Tools: []model.ToolSpec{WeatherTool}}
	for _, req := range []*model.Request{flat, split, split} {
		_, _, err := call(t, m, req, streamed)
		mustOK(t, err)
	}
	bodies := srv.bodies()
	if len(bodies) != 3 {
		t.Fatalf("the server saw %d requests, want 3", len(bodies))
	}
	if !bytes.Equal(bodies[1], bodies[0]) {
		t.Errorf("a request with its history in Request.History sent\n%s\nwhile the same conversation in Messages sent\n%s", bodies[1], bodies[0])
	}
	if !bytes.Equal(bodies[2], bodies[1]) {
		t.Errorf("the same request sent twice gave two bodies:\n%s\n%s", bodies[1], bodies[2])
	}
	if !bytes.Contains(bodies[1], []byte("[h0]")) {
		t.Errorf("the system message (in History) is missing from the body:\n%s", bodies[1])
	}
	at := 0 // the system prompt may have a field of its own; the turns are in order
	for _, marker := range []string{"[h1]", "[h2]", "[h3]", "[h4]", "[m5]"} {
		i := bytes.Index(bodies[1][at:], []byte(marker))
		if i < 0 {
			t.Fatalf("marker %s is missing from the body, or out of order:\n%s", marker, bodies[1])
		}
		at += i + len(marker)
	}
	if !reflect.DeepEqual(conv, HistoryConversation()) {
		t.Errorf("the model changed the messages of the request it was handed:\n got %+v\nwant %+v", conv, HistoryConversation())
	}
}

func mustOK(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("unexpected error: %v", err)
	}
}

func checkCall(t *testing.T, c model.ToolCall, city string) {
	t.Helper()
	if c.Name != "get_weather" || c.ID == "" {
		t.Errorf("call %+v: want name get_weather and an id", c)
	}
	var args map[string]any
	if err := json.Unmarshal([]byte(c.Arguments), &args); err != nil || !reflect.DeepEqual(args, map[string]any{"city": city}) {
		t.Errorf("call arguments %q, want {\"city\":%q}", c.Arguments, city)
	}
}

func count(chunks []*model.Chunk, f func(*model.Chunk) bool) int {
	n := 0
	for _, c := range chunks {
		if f(c) {
			n++
		}
	}
	return n
}

// call runs req through Invoke or through Stream and an Accumulator.
func call(t *testing.T, m model.Model, req *model.Request, streamed bool) (*model.Response, []*model.Chunk, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if !streamed {
		r, err := m.Invoke(ctx, req)
		if err == nil && r == nil {
			t.Fatal("Invoke returned neither a response nor an error")
		}
		return r, nil, err
	}
	var (
		acc    model.Accumulator
		chunks []*model.Chunk
	)
	for c, err := range m.Stream(ctx, req) {
		if err != nil {
			return acc.Response(), chunks, err
		}
		if c == nil {
			t.Fatal("Stream yielded a nil chunk without an error")
		}
		chunks = append(chunks, c)
		acc.Add(c)
	}
	return acc.Response(), chunks, nil
}

// server is a loopback API answering every request with one scenario.
type server struct {
	*httptest.Server
	mu   sync.Mutex
	seen [][]byte // request bodies, in arrival order
	// gone is closed once a hanging request's client has gone away.
	gone     chan struct{}
	goneOnce sync.Once
}

func serve(t *testing.T, p Provider, s Scenario) *server {
	t.Helper()
	srv := &server{gone: make(chan struct{})}
	stop := make(chan struct{})
	srv.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			t.Errorf("reading request body: %v", err)
			return
		}
		srv.mu.Lock()
		srv.seen = append(srv.seen, body)
		srv.mu.Unlock()
		rep := p.Reply(t, s, r, body)
		for k, vs := range rep.Header {
			for _, v := range vs {
				w.Header().Add(k, v)
			}
		}
		status := rep.Status
		if status == 0 {
			status = http.StatusOK
		}
		w.WriteHeader(status)
		fl, _ := w.(http.Flusher)
		for _, part := range rep.Parts {
			if _, err := w.Write(part); err != nil {
				return
			}
			if fl != nil {
				fl.Flush()
			}
		}
		if s == Hang {
			select {
			case <-r.Context().Done():
				srv.goneOnce.Do(func() { close(srv.gone) })
			case <-stop:
			}
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(stop) })
	return srv
}

// bodies returns the request bodies the server has read.
func (srv *server) bodies() [][]byte {
	srv.mu.Lock()
	defer srv.mu.Unlock()
	return slices.Clone(srv.seen)
}

// SSE renders server-sent events: each payload becomes "data: …\n\n", or
// "event: name\ndata: …\n\n" when given as "name\x00payload".
func SSE(events ...string) [][]byte {
	out := make([][]byte, 0, len(events))
	for _, e := range events {
		var b bytes.Buffer
		if name, data, ok := strings.Cut(e, "\x00"); ok {
			b.WriteString("event: " + name + "\n")
			e = data
		}
		b.WriteString("data: " + e + "\n\n")
		out = append(out, b.Bytes())
	}
	return out
}

// JSON is a one-part reply with a JSON body.
func JSON(status int, body string) Reply {
	return Reply{Status: status, Header: http.Header{"Content-Type": {"application/json"}}, Parts: [][]byte{[]byte(body)}}
}

// EventStream is a streamed SSE reply.
func EventStream(events ...string) Reply {
	return Reply{Header: http.Header{"Content-Type": {"text/event-stream"}}, Parts: SSE(events...)}
}

// FailsBothWays sends one user message through m's Invoke and through its
// Stream: each must fail with an error that is want (errors.Is) and whose
// text does not contain "secret", the word every credential a test plants
// in a provider's answer (a key, a token, a gateway header) carries.
func FailsBothWays(t testing.TB, m model.Model, want error) {
	t.Helper()
	req := &model.Request{Messages: []model.Message{model.Text(model.RoleUser, "x")}}
	_, invokeErr := m.Invoke(context.Background(), req)
	var streamErr error
	for _, err := range m.Stream(context.Background(), req) {
		streamErr = err
	}
	for _, c := range []struct {
		how string
		err error
	}{{"Invoke", invokeErr}, {"Stream", streamErr}} {
		if !errors.Is(c.err, want) {
			t.Fatalf("%s: err = %v, want %v", c.how, c.err, want)
		}
		if strings.Contains(c.err.Error(), "secret") {
			t.Errorf("%s: the error carries a credential: %v", c.how, c.err)
		}
	}
}
