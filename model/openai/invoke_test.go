package openai_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/agentryhq/agentry/model"
	"github.com/agentryhq/agentry/model/modeltest"
	"github.com/agentryhq/agentry/model/openai"
)

const completion = `{
  "id": "chatcmpl-AcD9",
  "object": "chat.completion",
  "created": 1733011200,
  "model": "gpt-4o-mini-2024-07-18",
  "choices": [
    {
      "index": 0,
      "message": {
        "role": "assistant",
        "content": null,
        "tool_calls": [
          {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\":\"Paris\"}"}},
          {"id": "call_2", "type": "function", "function": {"name": "get_time", "arguments": "{\"tz\":\"CET\""}}
        ],
        "refusal": null
      },
      "logprobs": null,
      "finish_reason": "tool_calls"
    }
  ],
  "usage": {
    "prompt_tokens": 90,
    "completion_tokens": 30,
    "total_tokens": 120,
    "prompt_tokens_details": {"cached_tokens": 10, "audio_tokens": 0},
    "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0, "accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0}
  },
  "system_fingerprint": "fp_0ba0d124f1"
}`

func TestInvoke_DecodesCompletion(t *testing.T) {
	t.Parallel()
	f := newFake(t, reply{body: completion})
	resp, err := newModel(t, f).Invoke(context.Background(), userReq("weather?"))
	if err != nil {
		t.Fatal(err)
	}
	want := []model.ToolCall{
		{ID: "call_1", Name: "get_weather", Arguments: `{"city":"Paris"}`},
		{ID: "call_2", Name: "get_time", Arguments: `{"tz":"CET"`}, // invalid JSON kept as sent
	}
	if len(resp.Message.ToolCalls) != 2 || resp.Message.ToolCalls[0] != want[0] || resp.Message.ToolCalls[1] != want[1] {
		t.Errorf("tool calls = %+v, want %+v", resp.Message.ToolCalls, want)
	}
	wantUsage := model.Usage{InputTokens: 90, OutputTokens: 30, TotalTokens: 120, CacheReadTokens: 10}
	if resp.Usage != wantUsage || resp.StopReason != "tool_calls" || resp.ModelID != "gpt-4o-mini-2024-07-18" || resp.Message.Role != model.RoleAssistant {
		t.Errorf("response = %+v", resp)
	}
	got := f.only()
	if got.header.Get("Accept") != "application/json" {
		t.Errorf("Accept = %q", got.header.Get("Accept"))
	}
	assertJSON(t, got.body, `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"weather?"}]}`)
}

func TestInvoke_BadBodiesAreErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		body string
		want error
	}{
		{"not JSON", `<html>oops</html>`, model.ErrMalformedResponse},
		{"no choices", `{"id":"x","object":"chat.completion","choices":[]}`, model.ErrMalformedResponse},
		{"error object with status 200", `{"error":{"message":"Invalid API key","type":"invalid_request_error","code":"invalid_api_key"}}`, model.ErrAuth},
		// OpenRouter: an error met while the model was producing the answer
		// comes in a 200 with the HTTP status it stands for as a numeric code.
		{"numeric 502 code with status 200", `{"error":{"code":502,"message":"Provider returned error"}}`, model.ErrServer},
		{"numeric 429 code with status 200", `{"error":{"code":429,"message":"Rate limit exceeded: free-models-per-min"}}`, model.ErrRateLimit},
		{"numeric 402 code with status 200", `{"error":{"code":402,"message":"Insufficient credits"}}`, model.ErrQuotaExceeded},
		{"refusal becomes the answer", `{"choices":[{"index":0,"message":{"role":"assistant","content":null,"refusal":"I can't help with that."},"finish_reason":"stop"}]}`, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFake(t, reply{body: tc.body})
			resp, err := newModel(t, f).Invoke(context.Background(), userReq("hi"))
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
			if tc.want == nil && resp.Message.Content != "I can't help with that." {
				t.Errorf("content = %q, want the refusal", resp.Message.Content)
			}
		})
	}
}

func TestErrors_StatusesAreClassified(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		rep        reply
		kind       error
		retryAfter time.Duration
		message    string
	}{
		{
			name: "429 with Retry-After",
			rep: reply{status: 429, header: map[string]string{"Retry-After": "2"},
				body: `{"error":{"message":"Rate limit reached for gpt-4o-mini in organization org-x on requests per min (RPM): Limit 3, Used 3, Requested 1.","type":"requests","param":null,"code":"rate_limit_exceeded"}}`},
			kind: model.ErrRateLimit, retryAfter: 2 * time.Second,
			message: "Rate limit reached for gpt-4o-mini in organization org-x on requests per min (RPM): Limit 3, Used 3, Requested 1. (type requests, code rate_limit_exceeded)",
		},
		{
			name:       "429 with retry-after-ms",
			rep:        reply{status: 429, header: map[string]string{"retry-after-ms": "250"}, body: `{"error":{"message":"slow down","type":"tokens","code":"rate_limit_exceeded"}}`},
			kind:       model.ErrRateLimit,
			retryAfter: 250 * time.Millisecond,
		},
		{
			name: "401 invalid key",
			rep:  reply{status: 401, body: `{"error":{"message":"Incorrect API key provided: sk-test. You can find your API key at https://platform.openai.com/account/api-keys.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`},
			kind: model.ErrAuth,
		},
		{
			name: "400 context length exceeded",
			rep:  reply{status: 400, body: `{"error":{"message":"This model's maximum context length is 128000 tokens. However, your messages resulted in 130412 tokens. Please reduce the length of the messages.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`},
			kind: model.ErrContextLength,
		},
		{
			name: "400 context length known only by its code",
			rep:  reply{status: 400, body: `{"error":{"message":"Input rejected.","type":"invalid_request_error","code":"context_length_exceeded"}}`},
			kind: model.ErrContextLength,
		},
		{
			name: "400 bad request",
			rep:  reply{status: 400, body: `{"error":{"message":"Invalid schema for function 'x'.","type":"invalid_request_error","param":"tools[0].function.parameters","code":"invalid_function_parameters"}}`},
			kind: model.ErrBadRequest,
		},
		{
			name: "500 server error",
			rep:  reply{status: 500, body: `{"error":{"message":"The server had an error while processing your request. Sorry about that!","type":"server_error","param":null,"code":null}}`},
			kind: model.ErrServer,
		},
		{
			name:    "502 from a proxy with an HTML body",
			rep:     reply{status: 502, header: map[string]string{"Content-Type": "text/html"}, body: "<html><body>Bad Gateway</body></html>\n"},
			kind:    model.ErrServer,
			message: "<html><body>Bad Gateway</body></html>",
		},
		{
			name:    "404 Ollama-style string error",
			rep:     reply{status: 404, body: `{"error":"model \"llama9\" not found, try pulling it first"}`},
			kind:    model.ErrBadRequest,
			message: `model "llama9" not found, try pulling it first`,
		},
	}
	for _, tc := range tests {
		for _, mode := range []string{"invoke", "stream"} {
			t.Run(tc.name+"/"+mode, func(t *testing.T) {
				t.Parallel()
				f := newFake(t, tc.rep)
				m := newModel(t, f)
				var err error
				if mode == "invoke" {
					_, err = m.Invoke(context.Background(), userReq("hi"))
				} else {
					_, _, err = drain(t, m, userReq("hi"))
				}
				var pe *model.ProviderError
				if !errors.As(err, &pe) {
					t.Fatalf("err = %v, want *model.ProviderError", err)
				}
				if !errors.Is(err, tc.kind) || pe.StatusCode != tc.rep.status || pe.Provider != "OpenAI" {
					t.Errorf("err = %#v, want kind %v and status %d from OpenAI", pe, tc.kind, tc.rep.status)
				}
				if pe.RetryAfter != tc.retryAfter {
					t.Errorf("RetryAfter = %v, want %v", pe.RetryAfter, tc.retryAfter)
				}
				if tc.message != "" && pe.Message != tc.message {
					t.Errorf("Message = %q, want %q", pe.Message, tc.message)
				}
			})
		}
	}
}

func invokeContent(m model.Model) (string, error) {
	r, err := m.Invoke(context.Background(), userReq("hi"))
	if err != nil {
		return "", err
	}
	return r.Message.Content, nil
}

func streamContent(m model.Model) (string, error) {
	var acc model.Accumulator
	for c, err := range m.Stream(context.Background(), userReq("hi")) {
		if err != nil {
			return "", err
		}
		acc.Add(c)
	}
	return acc.Response().Message.Content, nil
}

func TestWithRetry_WaitsRetryAfterThenSucceeds(t *testing.T) {
	t.Parallel()
	limited := func(header string, value string) reply {
		return reply{status: 429, header: map[string]string{header: value},
			body: `{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}`}
	}
	tests := []struct {
		name    string
		limited reply
		wait    time.Duration
		ok      reply
		call    func(model.Model) (string, error)
	}{
		{"invoke after Retry-After seconds", limited("Retry-After", "1"), time.Second, reply{body: `{"model":"gpt-4o-mini","choices":[{"index":0,"message":{"role":"assistant","content":"done"},"finish_reason":"stop"}]}`}, invokeContent},
		{"invoke after retry-after-ms", limited("retry-after-ms", "300"), 300 * time.Millisecond, reply{body: `{"model":"gpt-4o-mini","choices":[{"index":0,"message":{"role":"assistant","content":"done"},"finish_reason":"stop"}]}`}, invokeContent},
		{"stream after retry-after-ms", limited("retry-after-ms", "300"), 300 * time.Millisecond, reply{events: []string{chunkContent("done"), chunkStop}}, streamContent},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFake(t, tc.limited, tc.ok)
			// BaseDelay far below the asked wait: only Retry-After can explain the gap.
			m := model.WithRetry(newModel(t, f), model.RetryConfig{MaxAttempts: 3, BaseDelay: time.Millisecond, MaxDelay: 5 * time.Second})
			got, err := tc.call(m)
			if err != nil || got != "done" {
				t.Fatalf("got %q, %v; want done after a retry", got, err)
			}
			reqs := f.requests()
			if len(reqs) != 2 {
				t.Fatalf("server got %d requests, want 2 (one 429, one retry)", len(reqs))
			}
			if gap := reqs[1].at.Sub(reqs[0].at); gap < tc.wait {
				t.Errorf("retry came %v after the 429, want at least the %v the server asked for", gap, tc.wait)
			}
		})
	}
}

func TestWithRetry_GivesUpOnAuthErrors(t *testing.T) {
	t.Parallel()
	f := newFake(t, reply{status: 401, body: `{"error":{"message":"bad key","type":"invalid_request_error","code":"invalid_api_key"}}`})
	m := model.WithRetry(newModel(t, f), model.RetryConfig{MaxAttempts: 3, BaseDelay: time.Millisecond})
	if _, err := m.Invoke(context.Background(), userReq("hi")); !errors.Is(err, model.ErrAuth) {
		t.Fatalf("err = %v, want ErrAuth", err)
	}
	if n := len(f.requests()); n != 1 {
		t.Fatalf("server got %d requests, want 1 (auth errors are not retried)", n)
	}
}

func TestInvoke_UnreachableServerIsRetryable(t *testing.T) {
	t.Parallel()
	url := "http://" + modeltest.RefusedAddr(t) // nothing listens there
	m, err := openai.New(openai.Config{APIKey: "k", BaseURL: url, Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = m.Invoke(context.Background(), userReq("hi"))
	if err == nil || !model.Retryable(err) {
		t.Fatalf("err = %v, want a retryable connection error", err)
	}
}

func TestInvoke_CancelledContextReachesTheRequest(t *testing.T) {
	t.Parallel()
	arrived := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The server notices a client hang-up only once the body is read.
		io.Copy(io.Discard, r.Body)
		close(arrived)
		select {
		case <-r.Context().Done():
		case <-time.After(10 * time.Second):
		}
	}))
	t.Cleanup(srv.Close)
	m, err := openai.New(openai.Config{APIKey: "k", BaseURL: srv.URL, Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-arrived; cancel() }()
	_, err = m.Invoke(ctx, userReq("hi"))
	if !errors.Is(err, context.Canceled) || model.Retryable(err) {
		t.Fatalf("err = %v, want context.Canceled and not retryable", err)
	}
}

func TestModel_ConcurrentCalls(t *testing.T) {
	t.Parallel()
	f := newFake(t, reply{events: []string{chunkContent("x"), chunkStop, chunkUsage}})
	m := newModel(t, f)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Go(func() {
			var acc model.Accumulator
			for c, err := range m.Stream(context.Background(), userReq("hi")) {
				if err != nil {
					errs <- err
					return
				}
				acc.Add(c)
			}
			if got := acc.Response().Message.Content; got != "x" {
				errs <- errors.New("content " + got)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// An error body quoting a credential (OpenAI quotes a malformed key in full;
// a gateway page may echo the request's headers) never carries it into the
// error: not the API key, not Azure's api-key header, not a bearer token.
func TestHTTPErrors_NeverCarryCredentials(t *testing.T) {
	t.Parallel()
	const key, gateway, token = "sk-proj-secret-key-123", "gw-header-secret-456", "eyJ-token-secret-789"
	for secret, cfg := range map[string]openai.Config{
		key:     {APIKey: key},
		gateway: {Headers: map[string]string{"x-gateway-key": gateway}},
		token:   {TokenSource: func(context.Context) (string, error) { return token, nil }},
	} {
		t.Run(secret, func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.ReadAll(r.Body)
				w.WriteHeader(http.StatusUnauthorized)
				io.WriteString(w, `{"error":{"message":"Incorrect API key provided: `+secret+`.","type":"invalid_request_error","code":"invalid_api_key"}}`)
			}))
			t.Cleanup(srv.Close)
			cfg.BaseURL, cfg.Model = srv.URL, "gpt-4o-mini"
			m, err := openai.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			modeltest.FailsBothWays(t, m, model.ErrAuth)
		})
	}
}
