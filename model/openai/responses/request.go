package responses

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/agentryhq/agentry/model"
)

// reasoningKey is where an assistant message keeps its reasoning items
// (Agno's provider_data key): one item object, or a list of them.
const reasoningKey = "reasoning_output"

type wireRequest struct {
	Model             string            `json:"model"`
	Input             []any             `json:"input"`
	Tools             []json.RawMessage `json:"tools,omitempty"`
	ToolChoice        any               `json:"tool_choice,omitempty"`
	ParallelToolCalls *bool             `json:"parallel_tool_calls,omitempty"`
	Text              *textConfig       `json:"text,omitempty"`
	Reasoning         *reasoning        `json:"reasoning,omitempty"`
	Temperature       *float64          `json:"temperature,omitempty"`
	TopP              *float64          `json:"top_p,omitempty"`
	MaxOutputTokens   int               `json:"max_output_tokens,omitempty"`
	Store             bool              `json:"store"`
	Include           []string          `json:"include,omitempty"`
	Stream            bool              `json:"stream,omitempty"`
}

type textConfig struct {
	Format format `json:"format"`
}

type format struct {
	Type   string          `json:"type"`
	Name   string          `json:"name,omitempty"`
	Schema json.RawMessage `json:"schema,omitempty"`
	Strict bool            `json:"strict,omitempty"`
}

type reasoning struct {
	Effort  string `json:"effort,omitempty"`
	Summary string `json:"summary,omitempty"`
}

type inputMessage struct {
	Role    string `json:"role"`
	Content any    `json:"content"` // string or []inputPart
}

type inputPart struct {
	Type     string `json:"type"`
	Text     string `json:"text,omitempty"`
	ImageURL string `json:"image_url,omitempty"`
	// Detail is an image's; "auto", OpenAI's default, is sent because
	// vLLM's Responses endpoint requires the field.
	Detail   string `json:"detail,omitempty"`
	FileData string `json:"file_data,omitempty"`
	FileURL  string `json:"file_url,omitempty"`
	FileID   string `json:"file_id,omitempty"`
	Filename string `json:"filename,omitempty"`
}

type functionCallItem struct {
	Type      string `json:"type"`
	CallID    string `json:"call_id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

type functionOutputItem struct {
	Type   string `json:"type"`
	CallID string `json:"call_id"`
	Output string `json:"output"`
}

type functionTool struct {
	Type        string          `json:"type"`
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
	Strict      bool            `json:"strict"`
}

func (m *Model) buildRequest(req *model.Request, stream bool) ([]byte, error) {
	if req == nil {
		return nil, errors.New("responses: nil request")
	}
	if req.ThinkingBudget != 0 {
		return nil, fmt.Errorf("responses: %w: thinking_budget; use reasoning_effort", model.ErrUnsupportedParam)
	}
	p := m.cfg.Params.For(req)
	w := wireRequest{
		Model: m.cfg.Model, Input: []any{}, Temperature: p.Temperature, TopP: p.TopP,
		MaxOutputTokens: p.MaxTokens, Store: m.cfg.Store, Stream: stream,
	}
	if !m.cfg.Store && mayReason(m.cfg.Model) {
		// Stateless turns: reasoning comes back encrypted and is replayed.
		w.Include = []string{"reasoning.encrypted_content"}
	}
	for i, m := range req.All() {
		items, err := mapMessage(&m, !w.Store)
		if err != nil {
			return nil, fmt.Errorf("responses: message %d: %w", i, err)
		}
		w.Input = append(w.Input, items...)
	}
	for _, t := range req.Tools {
		if t.Name == "" {
			return nil, errors.New("responses: a tool has no name")
		}
		b, err := json.Marshal(functionTool{Type: "function", Name: t.Name, Description: t.Description, Parameters: t.Parameters, Strict: t.Strict})
		if err != nil {
			return nil, fmt.Errorf("responses: tool %q: %w", t.Name, err)
		}
		w.Tools = append(w.Tools, b)
	}
	w.Tools = append(w.Tools, m.cfg.BuiltinTools...)
	if len(w.Tools) > 0 {
		switch p.ToolChoice {
		case "":
		case "auto", "none", "required":
			w.ToolChoice = p.ToolChoice
		default:
			w.ToolChoice = map[string]string{"type": "function", "name": p.ToolChoice}
		}
		w.ParallelToolCalls = p.ParallelToolCalls
	}
	if rf := p.ResponseFormat; rf != nil {
		if len(rf.Schema) == 0 {
			w.Text = &textConfig{Format: format{Type: "json_object"}}
		} else {
			name := "response"
			if rf.Name != "" {
				name = rf.ToolName() // OpenAI takes [a-zA-Z0-9_-] only
			}
			w.Text = &textConfig{Format: format{Type: "json_schema", Name: name, Schema: rf.Schema, Strict: rf.Strict}}
		}
	}
	if p.ReasoningEffort != "" || p.IncludeThoughts {
		w.Reasoning = &reasoning{Effort: p.ReasoningEffort}
		if p.IncludeThoughts {
			w.Reasoning.Summary = "auto"
		}
	}
	data, err := json.Marshal(&w)
	if err != nil {
		return nil, fmt.Errorf("responses: encoding request: %w", err)
	}
	if data, err = p.MergeBody(data); err != nil {
		return nil, fmt.Errorf("responses: %w", err)
	}
	return data, nil
}

// mayReason reports whether a model may be a reasoning model: all but the
// known families that do not reason, for which OpenAI refuses include
// reasoning.encrypted_content ("Encrypted content is not supported with
// this model."). An unknown id (an Azure deployment's name, say) may reason.
func mayReason(id string) bool {
	id = strings.ToLower(id)
	if i := strings.LastIndexByte(id, '/'); i >= 0 {
		id = id[i+1:] // a gateway's "openai/gpt-4o"
	}
	for _, p := range []string{"gpt-4", "gpt-3.5", "chatgpt-", "gpt-5-chat"} {
		if strings.HasPrefix(id, p) {
			return false
		}
	}
	return true
}

// mapMessage turns one message into input items. An assistant turn replays
// its reasoning items first, then its text, then its function calls: the
// order the model produced them in. OpenAI refuses a reasoning item
// "provided without its required following item", so a turn with neither
// text nor calls (cut off while reasoning) replays none; stateless (store
// false, where OpenAI keeps no item to find by id) replays only the items
// carrying their encrypted_content.
func mapMessage(msg *model.Message, stateless bool) ([]any, error) {
	switch msg.Role {
	case model.RoleSystem:
		return []any{inputMessage{Role: "developer", Content: joinText(msg)}}, nil
	case model.RoleUser:
		if len(msg.Parts) == 0 {
			return []any{inputMessage{Role: "user", Content: msg.Content}}, nil
		}
		var parts []inputPart
		if msg.Content != "" {
			parts = append(parts, inputPart{Type: "input_text", Text: msg.Content})
		}
		for i := range msg.Parts {
			ip, err := mapPart(&msg.Parts[i])
			if err != nil {
				return nil, fmt.Errorf("part %d: %w", i, err)
			}
			if ip != nil {
				parts = append(parts, *ip)
			}
		}
		return []any{inputMessage{Role: "user", Content: parts}}, nil
	case model.RoleAssistant:
		var items []any
		text := joinText(msg)
		if text != "" || len(msg.ToolCalls) > 0 {
			items = reasoningItems(msg.ProviderData[reasoningKey])
			if stateless {
				items = slices.DeleteFunc(slices.Clone(items), func(it any) bool { return !encrypted(it) })
			}
		}
		if text != "" {
			items = append(items, inputMessage{Role: "assistant", Content: text})
		}
		for _, tc := range msg.ToolCalls {
			args := tc.Arguments
			if args == "" {
				args = "{}"
			}
			items = append(items, functionCallItem{Type: "function_call", CallID: tc.ID, Name: tc.Name, Arguments: args})
		}
		return items, nil
	case model.RoleTool:
		if msg.ToolCallID == "" {
			return nil, errors.New("tool message has no tool_call_id")
		}
		return []any{functionOutputItem{Type: "function_call_output", CallID: msg.ToolCallID, Output: joinText(msg)}}, nil
	}
	return nil, fmt.Errorf("unknown role %q", msg.Role)
}

// reasoningItems reads provider_data.reasoning_output: an item object or a
// list of them, as decoded from run_data (maps) or as produced here (raw JSON).
func reasoningItems(v any) []any {
	switch v := v.(type) {
	case nil:
		return nil
	case []any:
		// Clipped: the caller appends to it, and the list is the stored
		// message's (shared through the history), with room past its length.
		return slices.Clip(v)
	case json.RawMessage:
		var list []json.RawMessage
		if json.Unmarshal(v, &list) == nil {
			out := make([]any, len(list))
			for i := range list {
				out[i] = list[i]
			}
			return out
		}
		return []any{v}
	default:
		return []any{v}
	}
}

// encrypted reports whether a reasoning item (a map from run_data, raw
// JSON, or any value that encodes as the item) carries encrypted_content.
func encrypted(it any) bool {
	if m, ok := it.(map[string]any); ok {
		s, _ := m["encrypted_content"].(string)
		return s != ""
	}
	raw, ok := it.(json.RawMessage)
	if !ok {
		var err error
		if raw, err = json.Marshal(it); err != nil {
			return false
		}
	}
	var probe struct {
		EncryptedContent string `json:"encrypted_content"`
	}
	return json.Unmarshal(raw, &probe) == nil && probe.EncryptedContent != ""
}

func joinText(msg *model.Message) string {
	var b strings.Builder
	b.WriteString(msg.Content)
	for _, p := range msg.Parts {
		if p.Type == model.PartText && p.Text != "" {
			if b.Len() > 0 {
				b.WriteString("\n")
			}
			b.WriteString(p.Text)
		}
	}
	return b.String()
}

func mapPart(p *model.Part) (*inputPart, error) {
	switch p.Type {
	case model.PartText:
		if p.Text == "" {
			return nil, nil
		}
		return &inputPart{Type: "input_text", Text: p.Text}, nil
	case model.PartImage:
		switch {
		case len(p.Data) > 0:
			return &inputPart{Type: "input_image", ImageURL: dataURL(p.MIMEType, p.Data), Detail: "auto"}, nil
		case p.URL != "":
			return &inputPart{Type: "input_image", ImageURL: p.URL, Detail: "auto"}, nil
		}
		return nil, errors.New("image part has neither URL nor Data")
	case model.PartFile:
		name := p.Name
		if name == "" {
			name = "file"
		}
		switch {
		case len(p.Data) > 0:
			return &inputPart{Type: "input_file", FileData: dataURL(p.MIMEType, p.Data), Filename: name}, nil
		case strings.HasPrefix(p.URL, "data:"):
			return &inputPart{Type: "input_file", FileData: p.URL, Filename: name}, nil
		case strings.Contains(p.URL, "://"):
			return &inputPart{Type: "input_file", FileURL: p.URL}, nil
		case p.URL != "":
			return &inputPart{Type: "input_file", FileID: p.URL}, nil
		}
		return nil, errors.New("file part has neither URL nor Data")
	case model.PartAudio, model.PartVideo:
		return nil, fmt.Errorf("%s parts are not supported by the Responses API; use the openai (Chat Completions) provider for audio", p.Type)
	}
	return nil, fmt.Errorf("unknown part type %q", p.Type)
}

// dataURL is data as a base64 data: URL of the media type mime, bare (see
// model.MediaType); an empty one is sniffed.
func dataURL(mime string, data []byte) string {
	mt := model.MediaType(mime)
	if mt == "" {
		mt = model.MediaType(http.DetectContentType(data))
	}
	return "data:" + mt + ";base64," + base64.StdEncoding.EncodeToString(data)
}
