// Package sdkbench measures the per-turn cost of Agentry's hand-written
// provider clients against the official Go SDKs on identical loopback
// streams (docs/adr/model-providers-sdk.md). It is its own module so the SDKs
// never enter the main go.mod.
package sdkbench

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	anthropicsdk "github.com/anthropics/anthropic-sdk-go/v2"
	anthropicopt "github.com/anthropics/anthropic-sdk-go/v2/option"
	openaisdk "github.com/openai/openai-go/v3"
	openaiopt "github.com/openai/openai-go/v3/option"

	"github.com/agentryhq/agentry/model"
	"github.com/agentryhq/agentry/model/anthropic"
	"github.com/agentryhq/agentry/model/openai"
)

var weatherSchema = []byte(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`)

func request() *model.Request {
	return &model.Request{
		Messages: []model.Message{
			{Role: model.RoleSystem, Content: "You are terse."},
			{Role: model.RoleUser, Content: "Weather in Paris and Lyon?"},
		},
		Tools: []model.ToolSpec{{Name: "get_weather", Description: "Weather for a city", Parameters: weatherSchema}},
	}
}

// check fails the benchmark unless the turn decoded completely, so a client
// that silently drops data cannot look fast.
func check(b *testing.B, r *model.Response) {
	if len(r.Message.ToolCalls) != 2 || !strings.Contains(r.Message.ToolCalls[1].Arguments, `"Paris"`) || len(r.Message.Content) < 200 || r.Usage.OutputTokens != 57 {
		b.Fatalf("incomplete turn: %+v", r)
	}
}

func BenchmarkTurn_OpenAI_HandWritten(b *testing.B) {
	srv := server(b, openaiStream())
	m, err := openai.New(openai.Config{APIKey: "sk-test", BaseURL: srv.URL + "/v1", Model: "gpt-4o-mini", HTTPClient: &http.Client{}})
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

// openaiSDKTurn is what a provider on openai-go does per turn: map the neutral
// request to SDK params, stream, accumulate, map back.
func openaiSDKTurn(ctx context.Context, c openaisdk.Client, req *model.Request) (*model.Response, error) {
	params := openaisdk.ChatCompletionNewParams{Model: "gpt-4o-mini"}
	params.StreamOptions.IncludeUsage = openaisdk.Bool(true)
	for _, m := range req.All() {
		switch m.Role {
		case model.RoleSystem:
			params.Messages = append(params.Messages, openaisdk.SystemMessage(m.Content))
		case model.RoleUser:
			params.Messages = append(params.Messages, openaisdk.UserMessage(m.Content))
		}
	}
	for _, t := range req.Tools {
		var schema openaisdk.FunctionParameters
		if err := json.Unmarshal(t.Parameters, &schema); err != nil {
			return nil, err
		}
		params.Tools = append(params.Tools, openaisdk.ChatCompletionFunctionTool(openaisdk.FunctionDefinitionParam{
			Name: t.Name, Description: openaisdk.String(t.Description), Parameters: schema,
		}))
	}
	stream := c.Chat.Completions.NewStreaming(ctx, params)
	defer stream.Close()
	var acc openaisdk.ChatCompletionAccumulator
	for stream.Next() {
		acc.AddChunk(stream.Current())
	}
	if err := stream.Err(); err != nil {
		return nil, err
	}
	ch := acc.Choices[0]
	out := &model.Response{
		Message:    model.Message{Role: model.RoleAssistant, Content: ch.Message.Content},
		StopReason: string(ch.FinishReason),
		ModelID:    acc.Model,
		Usage: model.Usage{
			InputTokens: int(acc.Usage.PromptTokens), OutputTokens: int(acc.Usage.CompletionTokens),
			TotalTokens: int(acc.Usage.TotalTokens), CacheReadTokens: int(acc.Usage.PromptTokensDetails.CachedTokens),
		},
	}
	for _, tc := range ch.Message.ToolCalls {
		out.Message.ToolCalls = append(out.Message.ToolCalls, model.ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments})
	}
	return out, nil
}

func BenchmarkTurn_OpenAI_SDK(b *testing.B) {
	srv := server(b, openaiStream())
	c := openaisdk.NewClient(openaiopt.WithBaseURL(srv.URL+"/v1"), openaiopt.WithAPIKey("sk-test"),
		openaiopt.WithMaxRetries(0), openaiopt.WithHTTPClient(&http.Client{}))
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		r, err := openaiSDKTurn(ctx, c, request())
		if err != nil {
			b.Fatal(err)
		}
		check(b, r)
	}
}

func BenchmarkTurn_Anthropic_HandWritten(b *testing.B) {
	srv := server(b, anthropicStream())
	m, err := anthropic.New(anthropic.Config{APIKey: "k", BaseURL: srv.URL, Model: "claude-sonnet-4-5", HTTPClient: &http.Client{}})
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

func anthropicSDKTurn(ctx context.Context, c anthropicsdk.Client, req *model.Request) (*model.Response, error) {
	params := anthropicsdk.MessageNewParams{Model: "claude-sonnet-4-5", MaxTokens: 4096}
	for _, m := range req.All() {
		switch m.Role {
		case model.RoleSystem:
			params.System = append(params.System, anthropicsdk.TextBlockParam{Text: m.Content})
		case model.RoleUser:
			params.Messages = append(params.Messages, anthropicsdk.NewUserMessage(anthropicsdk.NewTextBlock(m.Content)))
		}
	}
	for _, t := range req.Tools {
		var schema anthropicsdk.ToolInputSchemaParam
		if err := json.Unmarshal(t.Parameters, &schema); err != nil {
			return nil, err
		}
		params.Tools = append(params.Tools, anthropicsdk.ToolUnionParam{OfTool: &anthropicsdk.ToolParam{
			Name: t.Name, Description: anthropicsdk.String(t.Description), InputSchema: schema,
		}})
	}
	stream := c.Messages.NewStreaming(ctx, params)
	defer stream.Close()
	var msg anthropicsdk.Message
	for stream.Next() {
		if err := msg.Accumulate(stream.Current()); err != nil {
			return nil, err
		}
	}
	if err := stream.Err(); err != nil {
		return nil, err
	}
	out := &model.Response{
		Message:    model.Message{Role: model.RoleAssistant},
		StopReason: string(msg.StopReason), ModelID: string(msg.Model),
		Usage: model.Usage{InputTokens: int(msg.Usage.InputTokens), OutputTokens: int(msg.Usage.OutputTokens),
			CacheReadTokens: int(msg.Usage.CacheReadInputTokens), CacheWriteTokens: int(msg.Usage.CacheCreationInputTokens)},
	}
	for _, blk := range msg.Content {
		switch v := blk.AsAny().(type) {
		case anthropicsdk.TextBlock:
			out.Message.Content += v.Text
		case anthropicsdk.ToolUseBlock:
			out.Message.ToolCalls = append(out.Message.ToolCalls, model.ToolCall{ID: v.ID, Name: v.Name, Arguments: string(v.Input)})
		}
	}
	return out, nil
}

func BenchmarkTurn_Anthropic_SDK(b *testing.B) {
	srv := server(b, anthropicStream())
	c := anthropicsdk.NewClient(anthropicopt.WithBaseURL(srv.URL), anthropicopt.WithAPIKey("k"),
		anthropicopt.WithMaxRetries(0), anthropicopt.WithHTTPClient(&http.Client{}))
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		r, err := anthropicSDKTurn(ctx, c, request())
		if err != nil {
			b.Fatal(err)
		}
		check(b, r)
	}
}
