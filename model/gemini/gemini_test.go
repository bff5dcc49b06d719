package gemini

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentryhq/agentry/model"
)

// recorder is a loopback server answering with one body and keeping requests.
type recorder struct {
	*httptest.Server
	mu   sync.Mutex
	reqs []*http.Request
	body [][]byte
}

func newRecorder(t *testing.T, contentType, answer string) *recorder {
	t.Helper()
	rec := &recorder{}
	rec.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		rec.mu.Lock()
		rec.reqs = append(rec.reqs, r)
		rec.body = append(rec.body, b)
		rec.mu.Unlock()
		w.Header().Set("Content-Type", contentType)
		io.WriteString(w, answer)
	}))
	t.Cleanup(rec.Close)
	return rec
}

func (r *recorder) last(t *testing.T) (*http.Request, []byte) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.reqs) == 0 {
		t.Fatal("no request reached the server")
	}
	return r.reqs[len(r.reqs)-1], r.body[len(r.body)-1]
}

func assertJSON(t *testing.T, got []byte, want string) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("body is not JSON: %v\n%s", err, got)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("bad want JSON: %v", err)
	}
	gb, _ := json.MarshalIndent(g, "", " ")
	wb, _ := json.MarshalIndent(w, "", " ")
	if !bytes.Equal(gb, wb) {
		t.Fatalf("request JSON mismatch\n got: %s\nwant: %s", gb, wb)
	}
}

func ptr[T any](v T) *T { return &v }

func TestRequest_ConversationMediaToolsAndThinking(t *testing.T) {
	t.Parallel()
	rec := newRecorder(t, "application/json", respJSON(textPart("ok"), "STOP", true))
	m, err := New(Config{APIKey: "test-key", BaseURL: rec.URL, Model: "gemini-2.5-pro", Params: model.Params{
		Temperature: ptr(0.4), TopP: ptr(0.95), MaxTokens: 800, Stop: []string{"END"}, Seed: ptr(int64(42)),
		PresencePenalty: ptr(0.1), FrequencyPenalty: ptr(0.2), ThinkingBudget: new(2048), IncludeThoughts: true,
		ToolChoice: "get_weather",
	}})
	if err != nil {
		t.Fatal(err)
	}
	req := &model.Request{
		Messages: []model.Message{
			{Role: model.RoleSystem, Content: "Be brief."},
			{Role: model.RoleUser, Content: "Look at these.", Parts: []model.Part{
				{Type: model.PartImage, Data: []byte("\x89PNG\r\n\x1a\n"), MIMEType: "image/png"},
				{Type: model.PartAudio, URL: "data:audio/wav;base64,UklGRg=="},
				{Type: model.PartVideo, URL: "gs://bucket/clip.mp4"},
				{Type: model.PartFile, URL: "https://example.com/report.pdf"},
			}},
			{Role: model.RoleAssistant, Content: "Checking.", ProviderData: map[string]any{"thought_signature": "dGV4dC1zaWc="},
				ToolCalls: []model.ToolCall{
					{ID: "gcall_resp-0_0", Name: "get_weather", Arguments: `{"city":"Paris"}`, ThoughtSignature: "c2lnLXBhcmlz"},
					{ID: "fc-7", Name: "get_weather", Arguments: `{"city":"Lyon"}`},
				}},
			{Role: model.RoleTool, ToolCallID: "gcall_resp-0_0", Content: "21C"},
			{Role: model.RoleTool, ToolCallID: "fc-7", ToolName: "get_weather", Content: "no data", ToolCallError: true},
		},
		Tools:          []model.ToolSpec{{Name: "get_weather", Description: "Weather", Parameters: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}}}`)}},
		ResponseFormat: &model.ResponseFormat{Name: "w", Schema: json.RawMessage(`{"type":"object"}`)},
	}
	if _, err := m.Invoke(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	r, body := rec.last(t)
	if r.URL.Path != "/v1beta/models/gemini-2.5-pro:generateContent" || r.Header.Get("x-goog-api-key") != "test-key" {
		t.Errorf("request %s with key %q", r.URL.Path, r.Header.Get("x-goog-api-key"))
	}
	assertJSON(t, body, `{
	 "contents":[
	  {"role":"user","parts":[{"text":"Look at these."},
	   {"inlineData":{"mimeType":"image/png","data":"iVBORw0KGgo="}},
	   {"inlineData":{"mimeType":"audio/wav","data":"UklGRg=="}},
	   {"fileData":{"mimeType":"video/mp4","fileUri":"gs://bucket/clip.mp4"}},
	   {"fileData":{"mimeType":"application/pdf","fileUri":"https://example.com/report.pdf"}}]},
	  {"role":"model","parts":[{"text":"Checking.","thoughtSignature":"dGV4dC1zaWc="},
	   {"functionCall":{"name":"get_weather","args":{"city":"Paris"}},"thoughtSignature":"c2lnLXBhcmlz"},
	   {"functionCall":{"id":"fc-7","name":"get_weather","args":{"city":"Lyon"}}}]},
	  {"role":"user","parts":[
	   {"functionResponse":{"name":"get_weather","response":{"result":"21C"}}},
	   {"functionResponse":{"id":"fc-7","name":"get_weather","response":{"error":"no data"}}}]}],
	 "systemInstruction":{"parts":[{"text":"Be brief."}]},
	 "tools":[{"functionDeclarations":[{"name":"get_weather","description":"Weather","parametersJsonSchema":{"type":"object","properties":{"city":{"type":"string"}}}}]}],
	 "toolConfig":{"functionCallingConfig":{"mode":"ANY","allowedFunctionNames":["get_weather"]}},
	 "generationConfig":{"temperature":0.4,"topP":0.95,"maxOutputTokens":800,"stopSequences":["END"],"seed":42,
	  "presencePenalty":0.1,"frequencyPenalty":0.2,"responseMimeType":"application/json","responseJsonSchema":{"type":"object"},
	  "thinkingConfig":{"thinkingBudget":2048,"includeThoughts":true}}}`)
}

func TestRequest_JSONModeAndReasoningEffort(t *testing.T) {
	t.Parallel()
	rec := newRecorder(t, "application/json", respJSON(textPart("{}"), "STOP", true))
	m, err := New(Config{APIKey: "k", BaseURL: rec.URL, Model: "gemini-3-pro-preview",
		Params: model.Params{ReasoningEffort: "low", ResponseFormat: &model.ResponseFormat{}, ExtraBody: map[string]any{"cachedContent": "cachedContents/abc"}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Invoke(context.Background(), &model.Request{Messages: []model.Message{model.Text(model.RoleUser, "hi")}}); err != nil {
		t.Fatal(err)
	}
	_, body := rec.last(t)
	assertJSON(t, body, `{"contents":[{"role":"user","parts":[{"text":"hi"}]}],"cachedContent":"cachedContents/abc",
		"generationConfig":{"responseMimeType":"application/json","thinkingConfig":{"thinkingLevel":"LOW"}}}`)
}

func TestStream_ThoughtSummariesAndSignaturesSurviveTheTurn(t *testing.T) {
	t.Parallel()
	stream := "data: " + respJSON(`{"text":"Considering the city","thought":true}`, "", false) + "\r\n\r\n" +
		"data: " + respJSON(`{"text":"It is "},{"text":"sunny.","thoughtSignature":"dGV4dA=="}`, "", false) + "\r\n\r\n" +
		"data: " + respJSON(callPart("get_weather", `{"city":"Paris"}`, "c2ln"), "STOP", true) + "\r\n\r\n"
	rec := newRecorder(t, "text/event-stream", stream)
	m, _ := New(Config{APIKey: "k", BaseURL: rec.URL, Model: "gemini-2.5-flash", Params: model.Params{IncludeThoughts: true}})
	var acc model.Accumulator
	for c, err := range m.Stream(context.Background(), &model.Request{Messages: []model.Message{model.Text(model.RoleUser, "hi")}}) {
		if err != nil {
			t.Fatal(err)
		}
		acc.Add(c)
	}
	msg := acc.Response().Message
	if msg.ReasoningContent != "Considering the city" || msg.Content != "It is sunny." {
		t.Errorf("reasoning %q content %q", msg.ReasoningContent, msg.Content)
	}
	if len(msg.ToolCalls) != 1 || msg.ToolCalls[0].ThoughtSignature != "c2ln" || msg.ToolCalls[0].ID != "gcall_resp-1_0" {
		t.Fatalf("tool calls %+v", msg.ToolCalls)
	}
	// Stored as run_data JSON and read back, the message still replays its signatures.
	raw, _ := json.Marshal(msg)
	var stored model.Message
	if err := json.Unmarshal(raw, &stored); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(raw), `"thought_signature":"c2ln"`) || !strings.Contains(string(raw), `"provider_data":{"thought_signature":"dGV4dA=="}`) {
		t.Errorf("stored message lacks signatures: %s", raw)
	}
	next := &model.Request{Messages: []model.Message{model.Text(model.RoleUser, "hi"), stored,
		{Role: model.RoleTool, ToolCallID: stored.ToolCalls[0].ID, Content: "sunny"}}}
	body, err := m.buildRequest(next)
	if err != nil {
		t.Fatal(err)
	}
	assertJSON(t, body, `{"contents":[{"role":"user","parts":[{"text":"hi"}]},
		{"role":"model","parts":[{"text":"It is sunny.","thoughtSignature":"dGV4dA=="},{"functionCall":{"name":"get_weather","args":{"city":"Paris"}},"thoughtSignature":"c2ln"}]},
		{"role":"user","parts":[{"functionResponse":{"name":"get_weather","response":{"result":"sunny"}}}]}],
		"generationConfig":{"thinkingConfig":{"includeThoughts":true}}}`)
}

func TestStream_ErrorInsideTheStreamIsClassified(t *testing.T) {
	t.Parallel()
	rec := newRecorder(t, "text/event-stream", "data: "+respJSON(textPart("Hi"), "", false)+"\n\n"+
		`data: {"error":{"code":503,"message":"overloaded","status":"UNAVAILABLE"}}`+"\n\n")
	m, _ := New(Config{APIKey: "k", BaseURL: rec.URL, Model: "gemini-2.5-flash"})
	var err error
	for _, e := range m.Stream(context.Background(), &model.Request{Messages: []model.Message{model.Text(model.RoleUser, "hi")}}) {
		if e != nil {
			err = e
		}
	}
	if !errors.Is(err, model.ErrServer) {
		t.Errorf("err = %v, want ErrServer", err)
	}
}

func TestNew_ModesAndEndpoints(t *testing.T) {
	t.Setenv("GOOGLE_API_KEY", "")
	t.Setenv("GEMINI_API_KEY", "")
	t.Setenv("GOOGLE_GENAI_USE_VERTEXAI", "")
	t.Setenv("GOOGLE_CLOUD_PROJECT", "")
	t.Setenv("GOOGLE_CLOUD_LOCATION", "")
	rec := newRecorder(t, "application/json", respJSON(textPart("ok"), "STOP", true))
	tok := func(context.Context) (string, error) { return "ya29.token", nil }
	tests := []struct {
		name     string
		cfg      Config
		wantPath string
		wantAuth string
		wantKey  string
	}{
		{"api key", Config{APIKey: "k1"}, "/v1beta/models/gemini-2.5-flash:generateContent", "", "k1"},
		{"vertex with project and token", Config{Vertex: true, Project: "proj", Location: "europe-west4", TokenSource: tok},
			"/v1/projects/proj/locations/europe-west4/publishers/google/models/gemini-2.5-flash:generateContent", "Bearer ya29.token", ""},
		{"vertex express mode", Config{Vertex: true, APIKey: "k2"}, "/v1/publishers/google/models/gemini-2.5-flash:generateContent", "", "k2"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.cfg.Model, tc.cfg.BaseURL = "gemini-2.5-flash", rec.URL
			m, err := New(tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := m.Invoke(context.Background(), &model.Request{Messages: []model.Message{model.Text(model.RoleUser, "hi")}}); err != nil {
				t.Fatal(err)
			}
			r, _ := rec.last(t)
			if r.URL.Path != tc.wantPath || r.Header.Get("Authorization") != tc.wantAuth || r.Header.Get("x-goog-api-key") != tc.wantKey {
				t.Errorf("path %s auth %q key %q", r.URL.Path, r.Header.Get("Authorization"), r.Header.Get("x-goog-api-key"))
			}
		})
	}
	for name, cfg := range map[string]Config{
		"no key":                      {Model: "g"},
		"vertex without project":      {Model: "g", Vertex: true},
		"parallel_tool_calls refused": {Model: "g", APIKey: "k", Params: model.Params{ParallelToolCalls: ptr(true)}},
		"no model":                    {APIKey: "k"},
	} {
		if _, err := New(cfg); err == nil {
			t.Errorf("%s: New accepted %+v", name, cfg)
		}
	}
	t.Setenv("GOOGLE_GENAI_USE_VERTEXAI", "true")
	t.Setenv("GOOGLE_CLOUD_PROJECT", "envproj")
	m, err := New(Config{Model: "g", TokenSource: tok})
	if err != nil || !strings.Contains(m.endpoint, "/projects/envproj/locations/global/") || !strings.HasPrefix(m.endpoint, DefaultVertexBaseURL) {
		t.Errorf("vertex from the environment: %v %s", err, m.endpoint)
	}
	// Without a token source, Application Default Credentials are used; with
	// none available the call fails as an auth error naming the fix.
	t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", t.TempDir()+"/missing.json")
	adc, err := New(Config{Model: "g", BaseURL: rec.URL})
	if err != nil {
		t.Fatal(err)
	}
	_, err = adc.Invoke(context.Background(), &model.Request{Messages: []model.Message{model.Text(model.RoleUser, "hi")}})
	if !errors.Is(err, model.ErrAuth) || !strings.Contains(err.Error(), "GOOGLE_APPLICATION_CREDENTIALS") {
		t.Errorf("ADC failure: %v", err)
	}
}

func TestRequest_RefusesWhatGeminiCannotTake(t *testing.T) {
	t.Parallel()
	m, _ := New(Config{APIKey: "k", BaseURL: "http://127.0.0.1:1", Model: "g"})
	for name, req := range map[string]*model.Request{
		"nil":                 nil,
		"media without MIME":  {Messages: []model.Message{{Role: model.RoleUser, Parts: []model.Part{{Type: model.PartFile, URL: "https://x/blob"}}}}},
		"tool result unnamed": {Messages: []model.Message{{Role: model.RoleTool, ToolCallID: "x", Content: "r"}}},
		"parallel per call":   {ParallelToolCalls: ptr(false)},
		"unknown tool choice": {Tools: []model.ToolSpec{{Name: "a"}}, ToolChoice: "b"},
	} {
		if _, err := m.buildRequest(req); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// Google's credential errors are ErrAuth whatever their status, and a
// daily quota is ErrQuotaExceeded; details of another shape never fail the
// decoding or hide a reason next to them.
func TestErrors_CredentialAndQuotaErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, body string
		status     int
		want       error
	}{
		{"wrong key", `{"error":{"code":400,"message":"API key not valid. Please pass a valid API key.","status":"INVALID_ARGUMENT","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"API_KEY_INVALID","domain":"googleapis.com"}]}}`, 400, model.ErrAuth},
		{"reason after a detail of another shape", `{"error":{"code":400,"message":"API key not valid.","status":"INVALID_ARGUMENT","details":[1,"x",{"reason":"API_KEY_INVALID"}]}}`, 400, model.ErrAuth},
		{"details not a list", `{"error":{"code":400,"message":"Invalid JSON payload received.","status":"INVALID_ARGUMENT","details":"x"}}`, 400, model.ErrBadRequest},
		{"other reason", `{"error":{"code":400,"message":"User location is not supported for the API use.","status":"FAILED_PRECONDITION","details":[{"reason":"LOCATION_NOT_SUPPORTED"}]}}`, 400, model.ErrBadRequest},
		{"expired token", `{"error":{"code":401,"message":"Request had invalid authentication credentials.","status":"UNAUTHENTICATED","details":[{"reason":"ACCESS_TOKEN_EXPIRED"}]}}`, 401, model.ErrAuth},
		{"array envelope", `[{"error":{"code":400,"message":"API key expired. Please renew the API key.","status":"INVALID_ARGUMENT","details":[{"reason":"API_KEY_INVALID"}]}}]`, 400, model.ErrAuth},
		{"daily quota", `{"error":{"code":429,"message":"You exceeded your current quota, please check your plan and billing details.","status":"RESOURCE_EXHAUSTED",` +
			`"details":[{"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[{"quotaMetric":"generativelanguage.googleapis.com/generate_content_free_tier_requests","quotaId":"GenerateRequestsPerDayPerProjectPerModel-FreeTier","quotaValue":"250"}]},` +
			`{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"3600s"}]}}`, 429, model.ErrQuotaExceeded},
		{"quota without details", `{"error":{"code":429,"message":"You exceeded your current quota, please check your plan and billing details.","status":"RESOURCE_EXHAUSTED"}}`, 429, model.ErrQuotaExceeded},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			msg, we := errorMessage([]byte(tc.body), tc.status)
			err := classify(tc.status, nil, msg, we)
			if !errors.Is(err, tc.want) || model.Retryable(err) {
				t.Errorf("%v, want non-retryable %v", err, tc.want)
			}
			if we == nil || !strings.Contains(err.Error(), we.Message) {
				t.Errorf("%v does not carry Google's message", err)
			}
		})
	}
}

// A per-minute limit says "You exceeded your current quota" too: with its
// RetryInfo it is a rate limit, retried after the delay Google gives (a
// Retry-After header wins).
func TestErrors_PerMinuteQuotaIsARateLimitWithItsDelay(t *testing.T) {
	t.Parallel()
	body := []byte(`{"error":{"code":429,"message":"You exceeded your current quota, please check your plan and billing details.","status":"RESOURCE_EXHAUSTED",` +
		`"details":[{"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[{"quotaMetric":"generativelanguage.googleapis.com/generate_content_free_tier_requests","quotaId":"GenerateRequestsPerMinutePerProjectPerModel-FreeTier","quotaValue":"15"}]},` +
		`{"@type":"type.googleapis.com/google.rpc.Help","links":[{"description":"Learn more about Gemini API quotas","url":"https://ai.google.dev/gemini-api/docs/rate-limits"}]},` +
		`{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"37.5s"}]}}`)
	for _, tc := range []struct {
		header http.Header
		want   time.Duration
	}{{nil, 37500 * time.Millisecond}, {http.Header{"Retry-After": {"5"}}, 5 * time.Second}} {
		msg, we := errorMessage(body, 429)
		err := classify(429, tc.header, msg, we)
		if !errors.Is(err, model.ErrRateLimit) || !model.Retryable(err) || err.RetryAfter != tc.want {
			t.Errorf("header %v: %v (RetryAfter %s), want a retryable ErrRateLimit after %s", tc.header, err, err.RetryAfter, tc.want)
		}
	}
	// The same inside a 200 stream.
	if err := streamError(envelope(t, body)); !errors.Is(err, model.ErrRateLimit) || err.RetryAfter != 37500*time.Millisecond {
		t.Errorf("in a stream: %v (RetryAfter %s)", err, err.RetryAfter)
	}
}

func envelope(t *testing.T, body []byte) *wireError {
	t.Helper()
	_, e := errorMessage(body, 0)
	if e == nil {
		t.Fatalf("no envelope in %s", body)
	}
	return e
}

// thinking_budget 0 turns thinking off (Gemini 2.5 Flash thinks unless told
// so): it is sent as thinkingBudget 0. It was taken for "not set" and
// nothing was sent, so the model went on thinking.
func TestRequest_ThinkingBudgetZeroTurnsThinkingOff(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		budget *int
		want   string
	}{
		{new(0), `{"thinkingBudget":0}`},
		{new(-1), `{"thinkingBudget":-1}`},
		{nil, ``},
	} {
		rec := newRecorder(t, "application/json", respJSON(textPart("ok"), "STOP", true))
		m, err := New(Config{APIKey: "k", BaseURL: rec.URL, Model: "gemini-2.5-flash", Params: model.Params{ThinkingBudget: tc.budget}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := m.Invoke(context.Background(), &model.Request{Messages: []model.Message{{Role: model.RoleUser, Content: "hi"}}}); err != nil {
			t.Fatal(err)
		}
		_, body := rec.last(t)
		var w struct {
			GenerationConfig struct {
				ThinkingConfig json.RawMessage `json:"thinkingConfig"`
			} `json:"generationConfig"`
		}
		if err := json.Unmarshal(body, &w); err != nil {
			t.Fatal(err)
		}
		if got := string(w.GenerationConfig.ThinkingConfig); got != tc.want {
			t.Errorf("budget %v: thinkingConfig = %s, want %s", tc.budget, got, tc.want)
		}
	}
}
