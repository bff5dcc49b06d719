package azure_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/agentryhq/agentry/model"
	"github.com/agentryhq/agentry/model/azure"
)

func serve(t *testing.T, h http.HandlerFunc) string {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL
}

// Azure's stream opens with a chunk of prompt_filter_results and no choices,
// sends content_filter_results beside each delta, and (with include_usage)
// ends with a usage chunk whose choices are empty: the answer, its tool call
// split mid-JSON and the usage all come through.
func TestStream_AzureChunksWithFilterResults(t *testing.T) {
	t.Parallel()
	const filters = `"content_filter_results":{"hate":{"filtered":false,"severity":"safe"}}`
	events := []string{
		`{"choices":[],"created":0,"id":"","model":"","object":"","prompt_filter_results":[{"prompt_index":0,"content_filter_results":{"hate":{"filtered":false,"severity":"safe"}}}]}`,
		`{"choices":[{"delta":{"content":"","role":"assistant"},"finish_reason":null,"index":0,` + filters + `}],"model":"gpt-4o-2024-08-06","object":"chat.completion.chunk"}`,
		`{"choices":[{"delta":{"content":"Checking"},"finish_reason":null,"index":0,` + filters + `}],"model":"gpt-4o-2024-08-06","object":"chat.completion.chunk"}`,
		`{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"get_weather","arguments":""}}]},"finish_reason":null,"index":0}],"model":"gpt-4o-2024-08-06","object":"chat.completion.chunk"}`,
		`{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"ci"}}]},"finish_reason":null,"index":0}],"model":"gpt-4o-2024-08-06","object":"chat.completion.chunk"}`,
		`{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"ty\":\"Paris\"}"}}]},"finish_reason":null,"index":0}],"model":"gpt-4o-2024-08-06","object":"chat.completion.chunk"}`,
		`{"choices":[{"content_filter_offsets":{"check_offset":0,"start_offset":0,"end_offset":8},"content_filter_results":{},"delta":{},"finish_reason":"tool_calls","index":0}],"model":"gpt-4o-2024-08-06","object":"chat.completion.chunk"}`,
		`{"choices":[],"model":"gpt-4o-2024-08-06","object":"chat.completion.chunk","usage":{"completion_tokens":17,"prompt_tokens":80,"total_tokens":97,"prompt_tokens_details":{"cached_tokens":64}}}`,
	}
	base := serve(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		for _, e := range events {
			io.WriteString(w, "data: "+e+"\n\n")
		}
		io.WriteString(w, "data: [DONE]\n\n")
	})
	m, err := azure.New(azure.Config{Endpoint: base, Model: "gpt-4o", APIKey: "az-key"})
	if err != nil {
		t.Fatal(err)
	}
	var acc model.Accumulator
	for c, err := range m.Stream(context.Background(), &model.Request{Messages: []model.Message{model.Text(model.RoleUser, "weather?")}}) {
		if err != nil {
			t.Fatal(err)
		}
		acc.Add(c)
	}
	r := acc.Response()
	if r.Message.Content != "Checking" || len(r.Message.ToolCalls) != 1 || r.Message.ToolCalls[0].Arguments != `{"city":"Paris"}` ||
		r.Message.ToolCalls[0].ID != "call_1" || r.StopReason != "tool_calls" || r.ModelID != "gpt-4o-2024-08-06" {
		t.Errorf("response %+v", r)
	}
	if want := (model.Usage{InputTokens: 80, OutputTokens: 17, TotalTokens: 97, CacheReadTokens: 64}); r.Usage != want {
		t.Errorf("usage %+v, want %+v", r.Usage, want)
	}
}

// Azure's answers to a throttled call (429 with retry-after-ms) and to a
// prompt its content filter refuses (400 content_filter) are classified, and
// an error body echoing the api-key or the Entra token does not carry it.
func TestErrors_AzureThrottlingContentFilterAndSecrets(t *testing.T) {
	t.Parallel()
	const key, token = "az-secret-key-0123456789", "eyJ0eXAi.secret-entra-token"
	base := serve(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		cred := r.Header.Get("api-key") + r.Header.Get("Authorization")
		switch {
		case strings.Contains(r.URL.Path, "/throttled/"):
			w.Header().Set("retry-after-ms", "1500")
			w.Header().Set("retry-after", "2")
			w.WriteHeader(http.StatusTooManyRequests)
			io.WriteString(w, `{"error":{"code":"429","message":"Requests to the ChatCompletions_Create Operation under Azure OpenAI API version 2024-10-21 have exceeded token rate limit of your current OpenAI S0 pricing tier. Please retry after 2 seconds."}}`)
		case strings.Contains(r.URL.Path, "/filtered/"):
			w.WriteHeader(http.StatusBadRequest)
			io.WriteString(w, `{"error":{"message":"The response was filtered due to the prompt triggering Azure OpenAI's content management policy.","type":null,"param":"prompt","code":"content_filter","status":400,"innererror":{"code":"ResponsibleAIPolicyViolation","content_filter_result":{"hate":{"filtered":true,"severity":"high"}}}}}`)
		default:
			w.WriteHeader(http.StatusUnauthorized)
			io.WriteString(w, `{"error":{"code":"401","message":"Access denied: credential `+cred+` is not valid."}}`)
		}
	})
	req := &model.Request{Messages: []model.Message{model.Text(model.RoleUser, "hi")}}
	call := func(cfg azure.Config, streamed bool) error {
		cfg.Endpoint, cfg.Model = base, "gpt-4o"
		m, err := azure.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if streamed {
			for _, err := range m.Stream(context.Background(), req) {
				if err != nil {
					return err
				}
			}
			return nil
		}
		_, err = m.Invoke(context.Background(), req)
		return err
	}
	for _, streamed := range []bool{false, true} {
		err := call(azure.Config{Deployment: "throttled", APIKey: key}, streamed)
		var pe *model.ProviderError
		if !errors.As(err, &pe) || !errors.Is(err, model.ErrRateLimit) || pe.RetryAfter != 1500*time.Millisecond {
			t.Errorf("throttled (stream %v): %v, want ErrRateLimit after 1.5s", streamed, err)
		}
		if err := call(azure.Config{Deployment: "filtered", APIKey: key}, streamed); !errors.Is(err, model.ErrBadRequest) || !strings.Contains(err.Error(), "content management policy") {
			t.Errorf("filtered (stream %v): %v, want ErrBadRequest naming the content filter", streamed, err)
		}
		for _, cfg := range []azure.Config{{APIKey: key}, {ADToken: token}, {TokenSource: func(context.Context) (string, error) { return token, nil }}} {
			err := call(cfg, streamed)
			if !errors.Is(err, model.ErrAuth) || strings.Contains(err.Error(), "secret") {
				t.Errorf("refused credentials (stream %v): %v, want ErrAuth without the credential", streamed, err)
			}
		}
	}
}
