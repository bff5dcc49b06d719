package anthropic

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/agentryhq/agentry/model"
)

// The request body of POST /v1/messages. Content blocks are distinct types so
// each marshals exactly the fields the API expects for its kind (a thinking block
// always carries "thinking" and "signature", a tool_use always carries "input").
type wireRequest struct {
	Model       string          `json:"model"`
	MaxTokens   int             `json:"max_tokens"`
	System      string          `json:"system,omitempty"`
	Messages    []wireMessage   `json:"messages"`
	Tools       []wireTool      `json:"tools,omitempty"`
	ToolChoice  *wireToolChoice `json:"tool_choice,omitempty"`
	Temperature *float64        `json:"temperature,omitempty"`
	TopP        *float64        `json:"top_p,omitempty"`
	// StopSequences is Params.Stop.
	StopSequences []string      `json:"stop_sequences,omitempty"`
	Thinking      *wireThinking `json:"thinking,omitempty"`
	Stream        bool          `json:"stream,omitempty"`
}

type wireMessage struct {
	Role    string `json:"role"`
	Content []any  `json:"content"`
}

type textBlock struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

type sourceBlock struct {
	Type   string     `json:"type"` // image or document
	Source wireSource `json:"source"`
	Title  string     `json:"title,omitempty"`
}

type wireSource struct {
	Type      string `json:"type"` // base64, url or text
	MediaType string `json:"media_type,omitempty"`
	Data      string `json:"data,omitempty"`
	URL       string `json:"url,omitempty"`
}

type toolUseBlock struct {
	Type  string          `json:"type"`
	ID    string          `json:"id"`
	Name  string          `json:"name"`
	Input json.RawMessage `json:"input"`
}

type toolResultBlock struct {
	Type      string `json:"type"`
	ToolUseID string `json:"tool_use_id"`
	Content   any    `json:"content,omitempty"` // string or []any of text/image blocks
	IsError   bool   `json:"is_error,omitempty"`
}

type thinkingBlock struct {
	Type      string `json:"type"`
	Thinking  string `json:"thinking"`
	Signature string `json:"signature"`
}

type redactedThinkingBlock struct {
	Type string `json:"type"`
	Data string `json:"data"`
}

type wireTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"input_schema"`
}

type wireToolChoice struct {
	Type                   string `json:"type"` // auto, any, tool, none
	Name                   string `json:"name,omitempty"`
	DisableParallelToolUse bool   `json:"disable_parallel_tool_use,omitempty"`
}

type wireThinking struct {
	Type         string `json:"type"`
	BudgetTokens int    `json:"budget_tokens"`
}

// requestPlan is an encoded request plus what decoding its answer needs to know.
type requestPlan struct {
	body []byte
	// formatTool names the forced tool standing in for a ResponseFormat; its
	// input becomes the answer's Content instead of a tool call. Empty if none.
	formatTool string
}

// emptySchema is the input_schema sent for a tool without parameters.
var emptySchema = json.RawMessage(`{"type":"object","properties":{}}`)

// buildRequest maps a model.Request to the Messages API body; see Model for how
// structured output is asked for.
func (m *Model) buildRequest(req *model.Request, stream bool) (requestPlan, error) {
	if req == nil {
		return requestPlan{}, errors.New("anthropic: nil request")
	}
	p := m.cfg.Params.For(req)
	// The rest reads the effective settings through a copy of req.
	eff := *req
	eff.Temperature, eff.MaxTokens, eff.ThinkingBudget = p.Temperature, p.MaxTokens, p.ThinkingTokens()
	eff.ToolChoice, eff.ResponseFormat, eff.ParallelToolCalls = p.ToolChoice, p.ResponseFormat, p.ParallelToolCalls
	req = &eff
	w := wireRequest{
		Model:         m.cfg.Model,
		MaxTokens:     req.MaxTokens,
		Temperature:   req.Temperature,
		TopP:          p.TopP,
		StopSequences: p.Stop,
		Stream:        stream,
	}
	if w.MaxTokens <= 0 {
		w.MaxTokens = m.cfg.MaxTokens
		// budget_tokens must be below max_tokens; leave the default room for the answer.
		if req.ThinkingBudget >= w.MaxTokens {
			w.MaxTokens = req.ThinkingBudget + m.cfg.MaxTokens
		}
	}
	if req.ThinkingBudget > 0 {
		w.Thinking = &wireThinking{Type: "enabled", BudgetTokens: req.ThinkingBudget}
	}

	system, msgs, err := mapMessages(req)
	if err != nil {
		return requestPlan{}, err
	}
	w.Messages = msgs

	names := make(map[string]bool, len(req.Tools))
	for _, t := range req.Tools {
		if t.Name == "" {
			return requestPlan{}, errors.New("anthropic: a tool has an empty name")
		}
		schema := t.Parameters
		if len(bytes.TrimSpace(schema)) == 0 {
			schema = emptySchema
		} else if !json.Valid(schema) {
			return requestPlan{}, fmt.Errorf("anthropic: tool %q has parameters that are not valid JSON", t.Name)
		}
		names[t.Name] = true
		w.Tools = append(w.Tools, wireTool{Name: t.Name, Description: t.Description, InputSchema: schema})
	}

	var plan requestPlan
	if rf := req.ResponseFormat; rf != nil {
		plan.formatTool = rf.ToolName()
		if names[plan.formatTool] {
			return requestPlan{}, fmt.Errorf("anthropic: response format %q collides with a tool of the same name; rename one", plan.formatTool)
		}
		if len(bytes.TrimSpace(rf.Schema)) == 0 || !json.Valid(rf.Schema) {
			return requestPlan{}, fmt.Errorf("anthropic: response format %q needs a valid JSON Schema", rf.Name)
		}
		w.Tools = append(w.Tools, wireTool{
			Name:        plan.formatTool,
			Description: "Give your final answer by calling this tool; its input is the structured response.",
			InputSchema: rf.Schema,
		})
		if req.ThinkingBudget > 0 {
			system = joinText(system, "When you have the final answer, reply by calling the "+plan.formatTool+" tool with it.")
		}
	}
	w.System = system

	if len(w.Tools) > 0 {
		tc, err := toolChoice(req, names, plan.formatTool)
		if err != nil {
			return requestPlan{}, err
		}
		w.ToolChoice = tc
	}

	plan.body, err = json.Marshal(&w)
	if err != nil {
		return requestPlan{}, fmt.Errorf("anthropic: encoding request: %w", err)
	}
	if plan.body, err = p.MergeBody(plan.body); err != nil {
		return requestPlan{}, fmt.Errorf("anthropic: %w", err)
	}
	return plan, nil
}

// toolChoice maps Request.ToolChoice ("", auto, none, required/any, a tool name)
// and the structured-output tool to the API's tool_choice.
func toolChoice(req *model.Request, names map[string]bool, formatTool string) (*wireToolChoice, error) {
	choice := req.ToolChoice
	var tc *wireToolChoice
	switch choice {
	case "":
	case "auto":
		tc = &wireToolChoice{Type: "auto"}
	case "none":
		tc = &wireToolChoice{Type: "none"}
	case "required", "any":
		tc = &wireToolChoice{Type: "any"}
	default:
		if !names[choice] {
			return nil, fmt.Errorf("anthropic: tool choice %q names no tool in the request", choice)
		}
		tc = &wireToolChoice{Type: "tool", Name: choice}
	}
	if formatTool != "" {
		switch {
		case req.ThinkingBudget > 0:
			tc = &wireToolChoice{Type: "auto"}
		case tc != nil && tc.Type == "tool":
			// The caller forces one of its tools this turn; keep that.
		case len(names) > 0 && (tc == nil || tc.Type != "none"):
			tc = &wireToolChoice{Type: "any"}
		default:
			tc = &wireToolChoice{Type: "tool", Name: formatTool}
		}
	}
	if tc == nil && req.ParallelToolCalls != nil && !*req.ParallelToolCalls {
		tc = &wireToolChoice{Type: "auto"}
	}
	if tc != nil && tc.Type != "none" && req.ParallelToolCalls != nil && !*req.ParallelToolCalls {
		tc.DisableParallelToolUse = true
	}
	return tc, nil
}

// mapMessages returns the system prompt and the conversation. Consecutive tool
// results become one user message, as the API wants all results of one assistant
// turn together.
func mapMessages(req *model.Request) (string, []wireMessage, error) {
	var (
		system string
		out    []wireMessage
		inTool bool // the last wire message holds tool results
	)
	for i, m := range req.All() {
		msg := &m
		switch msg.Role {
		case model.RoleSystem:
			system = joinText(system, msg.Content)
			for _, p := range msg.Parts {
				if p.Type == model.PartText {
					system = joinText(system, p.Text)
				}
			}
			continue
		case model.RoleTool:
			b, err := toolResult(i, msg)
			if err != nil {
				return "", nil, err
			}
			if inTool {
				last := &out[len(out)-1]
				last.Content = append(last.Content, b)
			} else {
				out = append(out, wireMessage{Role: "user", Content: []any{b}})
				inTool = true
			}
			continue
		case model.RoleUser:
			blocks, err := userBlocks(i, msg)
			if err != nil {
				return "", nil, err
			}
			if len(blocks) > 0 {
				out = append(out, wireMessage{Role: "user", Content: blocks})
			}
		case model.RoleAssistant:
			if blocks := assistantBlocks(msg); len(blocks) > 0 {
				out = append(out, wireMessage{Role: "assistant", Content: blocks})
			}
		default:
			return "", nil, fmt.Errorf("anthropic: message %d has unknown role %q", i, msg.Role)
		}
		inTool = false
	}
	return system, out, nil
}

func joinText(a, b string) string {
	switch {
	case b == "":
		return a
	case a == "":
		return b
	}
	return a + "\n\n" + b
}

func userBlocks(i int, msg *model.Message) ([]any, error) {
	var blocks []any
	if msg.Content != "" {
		blocks = append(blocks, textBlock{Type: "text", Text: msg.Content})
	}
	for _, p := range msg.Parts {
		b, err := partBlock(p)
		if err != nil {
			return nil, fmt.Errorf("anthropic: message %d: %w", i, err)
		}
		if b != nil {
			blocks = append(blocks, b)
		}
	}
	return blocks, nil
}

// assistantBlocks sends signed thinking blocks first (the API verifies them and
// needs them before the tool_use they led to), then text, then tool calls.
// Thinking without a signature cannot be verified and is left out.
func assistantBlocks(msg *model.Message) []any {
	var blocks []any
	thinking := msg.Thinking
	if len(thinking) == 0 {
		thinking = agnoThinking(msg)
	}
	for _, t := range thinking {
		switch t.Type {
		case "thinking":
			if t.Signature != "" {
				blocks = append(blocks, thinkingBlock{Type: "thinking", Thinking: t.Thinking, Signature: t.Signature})
			}
		case "redacted_thinking":
			if t.Data != "" {
				blocks = append(blocks, redactedThinkingBlock{Type: "redacted_thinking", Data: t.Data})
			}
		}
	}
	if msg.Content != "" {
		blocks = append(blocks, textBlock{Type: "text", Text: msg.Content})
	}
	for _, p := range msg.Parts {
		if p.Type == model.PartText && p.Text != "" {
			blocks = append(blocks, textBlock{Type: "text", Text: p.Text})
		}
	}
	for _, tc := range msg.ToolCalls {
		blocks = append(blocks, toolUseBlock{Type: "tool_use", ID: toolUseID(tc.ID), Name: tc.Name, Input: toolInput(tc.Arguments)})
	}
	return blocks
}

// agnoThinking reads the thinking of a message Agno stored: its
// reasoning_content signed by provider_data.signature, and a
// redacted_reasoning_content block.
func agnoThinking(msg *model.Message) []model.ThinkingBlock {
	var out []model.ThinkingBlock
	if sig, _ := msg.ProviderData["signature"].(string); sig != "" && msg.ReasoningContent != "" {
		out = append(out, model.ThinkingBlock{Type: "thinking", Thinking: msg.ReasoningContent, Signature: sig})
	}
	var data string
	if raw, ok := msg.Extra["redacted_reasoning_content"]; ok && json.Unmarshal(raw, &data) == nil && data != "" {
		out = append(out, model.ThinkingBlock{Type: "redacted_thinking", Data: data})
	}
	return out
}

// toolUseID returns id as the API takes a tool_use id (model.SafeToolCallID,
// no length cap).
func toolUseID(id string) string { return model.SafeToolCallID(id, 0) }

// toolInput returns args if it is a JSON object and {} otherwise: the API
// rejects a tool_use whose input is not an object, and a model's malformed
// arguments must not make the whole conversation unsendable.
func toolInput(args string) json.RawMessage {
	t := bytes.TrimSpace([]byte(args))
	if len(t) > 0 && t[0] == '{' && json.Valid(t) {
		return t
	}
	return json.RawMessage(`{}`)
}

func toolResult(i int, msg *model.Message) (toolResultBlock, error) {
	if msg.ToolCallID == "" {
		return toolResultBlock{}, fmt.Errorf("anthropic: tool message %d has no ToolCallID", i)
	}
	b := toolResultBlock{Type: "tool_result", ToolUseID: toolUseID(msg.ToolCallID), IsError: msg.ToolCallError}
	if len(msg.Parts) == 0 {
		if msg.Content != "" {
			b.Content = msg.Content
		}
		return b, nil
	}
	var content []any
	if msg.Content != "" {
		content = append(content, textBlock{Type: "text", Text: msg.Content})
	}
	for _, p := range msg.Parts {
		pb, err := partBlock(p)
		if err != nil {
			return toolResultBlock{}, fmt.Errorf("anthropic: tool message %d: %w", i, err)
		}
		if pb != nil {
			content = append(content, pb)
		}
	}
	if len(content) > 0 {
		b.Content = content
	}
	return b, nil
}
