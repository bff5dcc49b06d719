package sdkbench

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"google.golang.org/genai"

	"github.com/agentryhq/agentry/model"
	"github.com/agentryhq/agentry/model/gemini"
)

func geminiStream() string {
	var b strings.Builder
	w := func(parts, tail string) {
		b.WriteString(`data: {"candidates":[{"content":{"parts":[` + parts + `],"role":"model"}` + tail + `,"index":0}],"modelVersion":"gemini-2.5-flash","responseId":"r1"}` + "\r\n\r\n")
	}
	for i := range 40 {
		s, _ := json.Marshal("word" + strconv.Itoa(i) + " ")
		w(`{"text":`+string(s)+`}`, "")
	}
	call := `{"functionCall":{"name":"get_weather","args":{"city": "Paris"}}}`
	b.WriteString(`data: {"candidates":[{"content":{"parts":[` + call + `,` + call + `],"role":"model"},"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":82,"candidatesTokenCount":57,"totalTokenCount":139},"modelVersion":"gemini-2.5-flash","responseId":"r1"}` + "\r\n\r\n")
	return b.String()
}

func BenchmarkTurn_Gemini_HandWritten(b *testing.B) {
	srv := server(b, geminiStream())
	m, err := gemini.New(gemini.Config{APIKey: "k", BaseURL: srv.URL, Model: "gemini-2.5-flash", HTTPClient: &http.Client{}})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		var acc model.Accumulator
		for c, err := range m.Stream(ctx, request()) {
			if err != nil {
				b.Fatal(err)
			}
			acc.Add(c)
		}
		check(b, acc.Response())
	}
}

func geminiSDKTurn(ctx context.Context, c *genai.Client, req *model.Request) (*model.Response, error) {
	cfg := &genai.GenerateContentConfig{}
	var contents []*genai.Content
	for _, m := range req.All() {
		switch m.Role {
		case model.RoleSystem:
			cfg.SystemInstruction = genai.NewContentFromText(m.Content, genai.RoleUser)
		case model.RoleUser:
			contents = append(contents, genai.NewContentFromText(m.Content, genai.RoleUser))
		}
	}
	tool := &genai.Tool{}
	for _, t := range req.Tools {
		var schema any
		if err := json.Unmarshal(t.Parameters, &schema); err != nil {
			return nil, err
		}
		tool.FunctionDeclarations = append(tool.FunctionDeclarations, &genai.FunctionDeclaration{Name: t.Name, Description: t.Description, ParametersJsonSchema: schema})
	}
	cfg.Tools = []*genai.Tool{tool}
	out := &model.Response{Message: model.Message{Role: model.RoleAssistant}}
	for r, err := range c.Models.GenerateContentStream(ctx, "gemini-2.5-flash", contents, cfg) {
		if err != nil {
			return nil, err
		}
		if r.UsageMetadata != nil {
			out.Usage = model.Usage{InputTokens: int(r.UsageMetadata.PromptTokenCount), OutputTokens: int(r.UsageMetadata.CandidatesTokenCount), TotalTokens: int(r.UsageMetadata.TotalTokenCount)}
		}
		if len(r.Candidates) == 0 || r.Candidates[0].Content == nil {
			continue
		}
		for _, p := range r.Candidates[0].Content.Parts {
			if p.FunctionCall != nil {
				args, _ := json.Marshal(p.FunctionCall.Args)
				out.Message.ToolCalls = append(out.Message.ToolCalls, model.ToolCall{ID: p.FunctionCall.ID, Name: p.FunctionCall.Name, Arguments: string(args)})
			} else {
				out.Message.Content += p.Text
			}
		}
	}
	return out, nil
}

func BenchmarkTurn_Gemini_SDK(b *testing.B) {
	srv := server(b, geminiStream())
	ctx := context.Background()
	c, err := genai.NewClient(ctx, &genai.ClientConfig{APIKey: "k", Backend: genai.BackendGeminiAPI,
		HTTPClient: &http.Client{}, HTTPOptions: genai.HTTPOptions{BaseURL: srv.URL}})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		r, err := geminiSDKTurn(ctx, c, request())
		if err != nil {
			b.Fatal(err)
		}
		if len(r.Message.ToolCalls) != 2 || len(r.Message.Content) < 200 || r.Usage.OutputTokens != 57 {
			b.Fatalf("incomplete turn: %+v", r)
		}
	}
}
