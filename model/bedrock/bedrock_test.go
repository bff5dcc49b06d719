package bedrock

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/agentryhq/agentry/model"
)

type recorder struct {
	*httptest.Server
	mu     sync.Mutex
	bodies [][]byte
}

func newRecorder(t *testing.T, contentType string, answer []byte) *recorder {
	t.Helper()
	rec := &recorder{}
	rec.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		verifySigV4(t, r, b)
		rec.mu.Lock()
		rec.bodies = append(rec.bodies, b)
		rec.mu.Unlock()
		w.Header().Set("Content-Type", contentType)
		w.Write(answer)
	}))
	t.Cleanup(rec.Close)
	return rec
}

func (r *recorder) last(t *testing.T) []byte {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.bodies) == 0 {
		t.Fatal("no request reached the server")
	}
	return r.bodies[len(r.bodies)-1]
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

func TestRequest_ConverseBody(t *testing.T) {
	t.Parallel()
	rec := newRecorder(t, "application/json", []byte(`{"output":{"message":{"role":"assistant","content":[{"text":"ok"}]}},"stopReason":"end_turn","usage":`+usageJSON+`}`))
	m := newTestModel(t, rec.URL, model.Params{Temperature: ptr(0.5), TopP: ptr(0.9), MaxTokens: 2000, Stop: []string{"END"}, ThinkingBudget: new(1024), ToolChoice: "auto"})
	req := &model.Request{
		Messages: []model.Message{
			{Role: model.RoleSystem, Content: "Be brief."},
			{Role: model.RoleUser, Content: "Look", Parts: []model.Part{
				{Type: model.PartImage, Data: []byte("\x89PNG\r\n\x1a\n")},
				{Type: model.PartFile, Data: []byte("%PDF-1.4"), MIMEType: "application/pdf", Name: "Q3 report.pdf"},
				{Type: model.PartVideo, URL: "s3://bucket/clip.mp4"},
			}},
			{Role: model.RoleAssistant, Thinking: []model.ThinkingBlock{{Type: "thinking", Thinking: "Let me look.", Signature: "sig=="}, {Type: "thinking", Thinking: "unsigned"}},
				ToolCalls: []model.ToolCall{{ID: "tooluse_a", Name: "get_weather", Arguments: `{"city":"Paris"}`}, {ID: "tooluse_b", Name: "get_weather", Arguments: `oops`}}},
			{Role: model.RoleTool, ToolCallID: "tooluse_a", Content: "21C"},
			{Role: model.RoleTool, ToolCallID: "tooluse_b", Content: "bad args", ToolCallError: true},
		},
		Tools: []model.ToolSpec{{Name: "get_weather", Description: "Weather", Parameters: json.RawMessage(`{"type":"object"}`)}},
	}
	if _, err := m.Invoke(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	assertJSON(t, rec.last(t), `{
	 "messages":[
	  {"role":"user","content":[{"text":"Look"},
	   {"image":{"format":"png","source":{"bytes":"iVBORw0KGgo="}}},
	   {"document":{"format":"pdf","name":"Q3 report","source":{"bytes":"JVBERi0xLjQ="}}},
	   {"video":{"format":"mp4","source":{"s3Location":{"uri":"s3://bucket/clip.mp4"}}}}]},
	  {"role":"assistant","content":[{"reasoningContent":{"reasoningText":{"text":"Let me look.","signature":"sig=="}}},
	   {"toolUse":{"toolUseId":"tooluse_a","name":"get_weather","input":{"city":"Paris"}}},
	   {"toolUse":{"toolUseId":"tooluse_b","name":"get_weather","input":{}}}]},
	  {"role":"user","content":[{"toolResult":{"toolUseId":"tooluse_a","content":[{"text":"21C"}]}},
	   {"toolResult":{"toolUseId":"tooluse_b","content":[{"text":"bad args"}],"status":"error"}}]}],
	 "system":[{"text":"Be brief."}],
	 "inferenceConfig":{"maxTokens":2000,"temperature":0.5,"topP":0.9,"stopSequences":["END"]},
	 "toolConfig":{"tools":[{"toolSpec":{"name":"get_weather","description":"Weather","inputSchema":{"json":{"type":"object"}}}}],"toolChoice":{"auto":{}}},
	 "additionalModelRequestFields":{"thinking":{"type":"enabled","budget_tokens":1024}}}`)
}

func TestStream_ReasoningWithSignatureAndUsage(t *testing.T) {
	t.Parallel()
	body := bytes.Join([][]byte{msgStart(),
		frame("contentBlockDelta", `{"contentBlockIndex":0,"delta":{"reasoningContent":{"text":"Paris is "}},"p":"a"}`),
		frame("contentBlockDelta", `{"contentBlockIndex":0,"delta":{"reasoningContent":{"text":"in France."}},"p":"a"}`),
		frame("contentBlockDelta", `{"contentBlockIndex":0,"delta":{"reasoningContent":{"signature":"EqoBCkgIARAB"}},"p":"a"}`),
		blockStop("0"), textDelta("1", "Sunny."), blockStop("1"), msgStop("end_turn"), metadata()}, nil)
	rec := newRecorder(t, "application/vnd.amazon.eventstream", body)
	m := newTestModel(t, rec.URL, model.Params{})
	var acc model.Accumulator
	for c, err := range m.Stream(context.Background(), &model.Request{Messages: []model.Message{model.Text(model.RoleUser, "hi")}}) {
		if err != nil {
			t.Fatal(err)
		}
		acc.Add(c)
	}
	r := acc.Response()
	want := model.ThinkingBlock{Type: "thinking", Thinking: "Paris is in France.", Signature: "EqoBCkgIARAB"}
	if r.Message.Content != "Sunny." || r.Message.ReasoningContent != "Paris is in France." || len(r.Message.Thinking) != 1 || r.Message.Thinking[0] != want {
		t.Errorf("message %+v", r.Message)
	}
	if r.Usage != testUsage || r.StopReason != "end_turn" {
		t.Errorf("usage %+v stop %q", r.Usage, r.StopReason)
	}
}

func TestStream_ExceptionsAndBrokenFrames(t *testing.T) {
	t.Parallel()
	corrupt := textDelta("0", "Hello")
	corrupt[len(corrupt)-1] ^= 0xff // message CRC
	tests := []struct {
		name string
		body []byte
		want error
	}{
		{"throttling exception", bytes.Join([][]byte{msgStart(), exceptionFrame("throttlingException", "Too many tokens")}, nil), model.ErrRateLimit},
		{"model stream error", bytes.Join([][]byte{msgStart(), exceptionFrame("modelStreamErrorException", "boom")}, nil), model.ErrServer},
		{"validation exception", bytes.Join([][]byte{exceptionFrame("validationException", "Input is too long for requested model.")}, nil), model.ErrContextLength},
		{"bad CRC", bytes.Join([][]byte{msgStart(), corrupt}, nil), model.ErrMalformedResponse},
		{"tool input without a start", bytes.Join([][]byte{msgStart(), toolDelta("4", "{}")}, nil), model.ErrMalformedResponse},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rec := newRecorder(t, "application/vnd.amazon.eventstream", tc.body)
			m := newTestModel(t, rec.URL, model.Params{})
			var err error
			for _, e := range m.Stream(context.Background(), &model.Request{Messages: []model.Message{model.Text(model.RoleUser, "hi")}}) {
				if e != nil {
					err = e
				}
			}
			if !errors.Is(err, tc.want) {
				t.Errorf("err = %v, want %v", err, tc.want)
			}
		})
	}
}

func TestNew_RefusesWhatConverseCannotTake(t *testing.T) {
	t.Parallel()
	for name, p := range map[string]model.Params{
		"seed":                {Seed: ptr(int64(1))},
		"presence_penalty":    {PresencePenalty: ptr(0.1)},
		"reasoning_effort":    {ReasoningEffort: "low"},
		"parallel_tool_calls": {ParallelToolCalls: ptr(true)},
		"include_thoughts":    {IncludeThoughts: true},
		"response_format":     {ResponseFormat: &model.ResponseFormat{}},
	} {
		_, err := New(context.Background(), Config{Model: "m", Region: "us-east-1", Credentials: credsProvider(), Params: p})
		if !errors.Is(err, model.ErrUnsupportedParam) {
			t.Errorf("%s: err = %v, want ErrUnsupportedParam", name, err)
		}
	}
	m := newTestModel(t, "http://127.0.0.1:1", model.Params{})
	for name, req := range map[string]*model.Request{
		"audio":          {Messages: []model.Message{{Role: model.RoleUser, Parts: []model.Part{{Type: model.PartAudio, Data: []byte("x")}}}}},
		"http image URL": {Messages: []model.Message{{Role: model.RoleUser, Parts: []model.Part{{Type: model.PartImage, URL: "https://x/a.png"}}}}},
		"odd MIME":       {Messages: []model.Message{{Role: model.RoleUser, Parts: []model.Part{{Type: model.PartImage, Data: []byte("x"), MIMEType: "image/tiff"}}}}},
	} {
		if _, err := m.buildRequest(req); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestNew_RegionAndCredentialsFromTheEnvironment(t *testing.T) {
	t.Setenv("AWS_REGION", "eu-west-3")
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDENV")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "secret")
	t.Setenv("AWS_CONFIG_FILE", t.TempDir()+"/none")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", t.TempDir()+"/none")
	m, err := New(context.Background(), Config{Model: "amazon.nova-pro-v1:0"})
	if err != nil {
		t.Fatal(err)
	}
	if m.base != "https://bedrock-runtime.eu-west-3.amazonaws.com" {
		t.Errorf("endpoint %s", m.base)
	}
	c, err := m.cfg.Credentials.Retrieve(context.Background())
	if err != nil || c.AccessKeyID != "AKIDENV" {
		t.Errorf("credentials %+v, %v", c, err)
	}
}
