package openai

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"path"
	"strings"

	"github.com/agentryhq/agentry/model"
)

// chatRequest is the body of POST /chat/completions.
type chatRequest struct {
	Model               string          `json:"model"`
	Messages            []chatMessage   `json:"messages"`
	Tools               []chatTool      `json:"tools,omitempty"`
	ToolChoice          any             `json:"tool_choice,omitempty"`
	ParallelToolCalls   *bool           `json:"parallel_tool_calls,omitempty"`
	ResponseFormat      *responseFormat `json:"response_format,omitempty"`
	Temperature         *float64        `json:"temperature,omitempty"`
	TopP                *float64        `json:"top_p,omitempty"`
	MaxTokens           int             `json:"max_tokens,omitempty"`
	MaxCompletionTokens int             `json:"max_completion_tokens,omitempty"`
	Stop                []string        `json:"stop,omitempty"`
	Seed                *int64          `json:"seed,omitempty"`
	RandomSeed          *int64          `json:"random_seed,omitempty"` // Mistral's seed
	PresencePenalty     *float64        `json:"presence_penalty,omitempty"`
	FrequencyPenalty    *float64        `json:"frequency_penalty,omitempty"`
	ReasoningEffort     string          `json:"reasoning_effort,omitempty"`
	Stream              bool            `json:"stream,omitempty"`
	StreamOptions       *streamOptions  `json:"stream_options,omitempty"`
}

type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

type chatMessage struct {
	Role string `json:"role"`
	// Content is a string, a []contentPart, or nil (an assistant turn that
	// only calls tools).
	Content    any            `json:"content,omitempty"`
	ToolCalls  []chatToolCall `json:"tool_calls,omitempty"`
	ToolCallID string         `json:"tool_call_id,omitempty"`
	// ReasoningContent is an assistant turn's reasoning, sent back to
	// DeepSeek only (see buildRequest).
	ReasoningContent string `json:"reasoning_content,omitempty"`
}

type chatToolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"`
	Function chatFunction `json:"function"`
}

type chatFunction struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

type contentPart struct {
	Type       string      `json:"type"`
	Text       string      `json:"text,omitempty"`
	ImageURL   *imageURL   `json:"image_url,omitempty"`
	InputAudio *inputAudio `json:"input_audio,omitempty"`
	File       *filePart   `json:"file,omitempty"`
}

type imageURL struct {
	URL string `json:"url"`
}

type inputAudio struct {
	Data   string `json:"data"`
	Format string `json:"format"`
}

type filePart struct {
	FileData string `json:"file_data,omitempty"`
	FileID   string `json:"file_id,omitempty"`
	Filename string `json:"filename,omitempty"`
}

type chatTool struct {
	Type     string       `json:"type"`
	Function toolFunction `json:"function"`
}

type toolFunction struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
	Strict      bool            `json:"strict,omitempty"`
}

type responseFormat struct {
	Type       string      `json:"type"`
	JSONSchema *jsonSchema `json:"json_schema,omitempty"`
}

type jsonSchema struct {
	Name   string          `json:"name"`
	Schema json.RawMessage `json:"schema"`
	Strict bool            `json:"strict,omitempty"`
}

type namedToolChoice struct {
	Type     string `json:"type"`
	Function struct {
		Name string `json:"name"`
	} `json:"function"`
}

// buildRequest maps a provider-neutral request onto the Chat Completions body.
func (m *Model) buildRequest(req *model.Request, stream bool) ([]byte, error) {
	if req == nil {
		return nil, errors.New("openai: nil request")
	}
	p := m.params.For(req)
	if req.ThinkingBudget != 0 {
		return nil, fmt.Errorf("openai: %w: thinking_budget; use reasoning_effort", model.ErrUnsupportedParam)
	}
	body := chatRequest{
		Model:               m.info.ID,
		Messages:            make([]chatMessage, 0, req.Len()),
		Temperature:         p.Temperature,
		TopP:                p.TopP,
		MaxCompletionTokens: p.MaxTokens,
		Stop:                p.Stop,
		Seed:                p.Seed,
		PresencePenalty:     p.PresencePenalty,
		FrequencyPenalty:    p.FrequencyPenalty,
		ReasoningEffort:     p.ReasoningEffort,
	}
	// strict: Mistral's API refuses any field it does not know (422
	// extra_forbidden), max_completion_tokens and stream_options among them.
	strict := m.info.Provider == "Mistral"
	if m.info.Provider != "OpenAI" && m.info.Provider != "Azure" {
		// OpenAI wants max_completion_tokens (its reasoning models refuse
		// max_tokens); compatible servers such as Ollama's read only
		// max_tokens and ignore the other silently.
		body.MaxTokens = p.MaxTokens
		if strict {
			body.MaxCompletionTokens = 0
			body.Seed, body.RandomSeed = nil, p.Seed
		}
	}
	// DeepSeek's thinking mode refuses a tool-call turn without the
	// reasoning that led to it ("Missing reasoning_content field in the
	// assistant message"); Agno's DeepSeek model sends it back. Other
	// servers get no such field.
	withReasoning := m.info.Provider == "DeepSeek"
	idFor := m.toolCallID
	for i, m := range req.All() {
		msg, err := mapMessage(&m)
		if err != nil {
			return nil, fmt.Errorf("openai: message %d: %w", i, err)
		}
		if withReasoning && m.Role == model.RoleAssistant {
			msg.ReasoningContent = m.ReasoningContent
		}
		if msg.ToolCallID != "" {
			msg.ToolCallID = idFor(msg.ToolCallID)
		}
		for j := range msg.ToolCalls {
			msg.ToolCalls[j].ID = idFor(msg.ToolCalls[j].ID)
		}
		body.Messages = append(body.Messages, msg)
	}
	for _, t := range req.Tools {
		if t.Name == "" {
			return nil, errors.New("openai: a tool has no name")
		}
		body.Tools = append(body.Tools, chatTool{Type: "function", Function: toolFunction{
			Name: t.Name, Description: t.Description, Parameters: t.Parameters, Strict: t.Strict,
		}})
	}
	// OpenAI rejects tool_choice and parallel_tool_calls when no tools are sent.
	if len(body.Tools) > 0 {
		switch p.ToolChoice {
		case "":
		case "auto", "none", "required":
			body.ToolChoice = p.ToolChoice
		default:
			var c namedToolChoice
			c.Type = "function"
			c.Function.Name = p.ToolChoice
			body.ToolChoice = c
		}
		body.ParallelToolCalls = p.ParallelToolCalls
	}
	if rf := p.ResponseFormat; rf != nil && len(rf.Schema) == 0 {
		// No schema: JSON mode, any JSON object.
		body.ResponseFormat = &responseFormat{Type: "json_object"}
	} else if rf != nil {
		name := "response"
		if rf.Name != "" {
			name = rf.ToolName() // OpenAI takes [a-zA-Z0-9_-] only
		}
		body.ResponseFormat = &responseFormat{Type: "json_schema", JSONSchema: &jsonSchema{
			Name: name, Schema: rf.Schema, Strict: rf.Strict,
		}}
	}
	if stream {
		body.Stream = true
		if !strict { // Mistral sends the usage in its last chunk unasked
			body.StreamOptions = &streamOptions{IncludeUsage: true}
		}
	}
	data, err := json.Marshal(body)
	if err != nil {
		return nil, fmt.Errorf("openai: encoding request: %w", err)
	}
	if data, err = p.MergeBody(data); err != nil {
		return nil, fmt.Errorf("openai: %w", err)
	}
	return data, nil
}

// toolCallID returns the id a tool call (and its result) is sent with: as
// it is, unless the history holds another server's id this one refuses.
// OpenAI and Azure take ids of at most 40 characters (vLLM's are 46),
// Mistral only 9 letters and digits. A refused id is replaced by one made
// from its hash, the same on the call and on its result.
func (m *Model) toolCallID(id string) string {
	switch m.info.Provider {
	case "OpenAI", "Azure":
		if len(id) > 40 {
			sum := sha256.Sum256([]byte(id))
			return "call_" + hex.EncodeToString(sum[:])[:35]
		}
	case "Mistral":
		if len(id) != 9 || strings.IndexFunc(id, func(c rune) bool {
			return !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9')
		}) >= 0 {
			sum := sha256.Sum256([]byte(id))
			return hex.EncodeToString(sum[:])[:9]
		}
	}
	return id
}

func mapMessage(msg *model.Message) (chatMessage, error) {
	out := chatMessage{Role: string(msg.Role)}
	switch msg.Role {
	case model.RoleSystem, model.RoleTool:
		text, err := textOnly(msg)
		if err != nil {
			return out, err
		}
		out.Content = text
		if msg.Role == model.RoleTool {
			if msg.ToolCallID == "" {
				return out, errors.New("tool message has no tool_call_id")
			}
			out.ToolCallID = msg.ToolCallID
		}
	case model.RoleAssistant:
		text, err := textOnly(msg)
		if err != nil {
			return out, err
		}
		if text != "" || len(msg.ToolCalls) == 0 {
			out.Content = text
		}
		for _, tc := range msg.ToolCalls {
			args := tc.Arguments
			if args == "" {
				args = "{}"
			}
			out.ToolCalls = append(out.ToolCalls, chatToolCall{
				ID: tc.ID, Type: "function", Function: chatFunction{Name: tc.Name, Arguments: args},
			})
		}
	case model.RoleUser:
		if len(msg.Parts) == 0 {
			out.Content = msg.Content
			break
		}
		parts := make([]contentPart, 0, len(msg.Parts)+1)
		if msg.Content != "" {
			parts = append(parts, contentPart{Type: "text", Text: msg.Content})
		}
		for i := range msg.Parts {
			p, ok, err := mapPart(&msg.Parts[i])
			if err != nil {
				return out, fmt.Errorf("part %d: %w", i, err)
			}
			if ok {
				parts = append(parts, p)
			}
		}
		out.Content = parts
	default:
		return out, fmt.Errorf("unknown role %q", msg.Role)
	}
	return out, nil
}

// textOnly joins Content and text parts; only user messages may carry media.
func textOnly(msg *model.Message) (string, error) {
	if len(msg.Parts) == 0 {
		return msg.Content, nil
	}
	var b strings.Builder
	b.WriteString(msg.Content)
	for _, p := range msg.Parts {
		if p.Type != model.PartText {
			return "", fmt.Errorf("%s messages cannot carry %s parts; put media in a user message", msg.Role, p.Type)
		}
		if b.Len() > 0 && p.Text != "" {
			b.WriteString("\n")
		}
		b.WriteString(p.Text)
	}
	return b.String(), nil
}

// mapPart converts one multimodal part; ok is false for an empty text part.
func mapPart(p *model.Part) (contentPart, bool, error) {
	switch p.Type {
	case model.PartText:
		if p.Text == "" {
			return contentPart{}, false, nil
		}
		return contentPart{Type: "text", Text: p.Text}, true, nil
	case model.PartImage:
		switch {
		case len(p.Data) > 0:
			return contentPart{Type: "image_url", ImageURL: &imageURL{URL: dataURL(p.MIMEType, p.Data)}}, true, nil
		case p.URL != "":
			return contentPart{Type: "image_url", ImageURL: &imageURL{URL: p.URL}}, true, nil
		}
		return contentPart{}, false, errors.New("image part has neither URL nor Data")
	case model.PartAudio:
		data, mime := p.Data, p.MIMEType
		if len(data) == 0 {
			var err error
			if data, mime, err = decodeDataURL(p.URL, mime); err != nil {
				return contentPart{}, false, fmt.Errorf("audio part: %w", err)
			}
		}
		format := audioFormat(mime, p.Name)
		if format == "" {
			return contentPart{}, false, fmt.Errorf("audio part: unsupported format (MIME %q); OpenAI takes wav or mp3", mime)
		}
		return contentPart{Type: "input_audio", InputAudio: &inputAudio{
			Data: base64.StdEncoding.EncodeToString(data), Format: format,
		}}, true, nil
	case model.PartFile:
		name := p.Name
		switch {
		case len(p.Data) > 0:
			if name == "" {
				name = "file"
			}
			return contentPart{Type: "file", File: &filePart{FileData: dataURL(p.MIMEType, p.Data), Filename: name}}, true, nil
		case strings.HasPrefix(p.URL, "data:"):
			if name == "" {
				name = "file"
			}
			return contentPart{Type: "file", File: &filePart{FileData: p.URL, Filename: name}}, true, nil
		case p.URL != "" && !strings.Contains(p.URL, "://"):
			// An id from the Files API, e.g. "file-abc123".
			return contentPart{Type: "file", File: &filePart{FileID: p.URL}}, true, nil
		case p.URL != "":
			return contentPart{}, false, fmt.Errorf("file part %q: Chat Completions cannot fetch file URLs; pass Data (or a Files API id)", p.URL)
		}
		return contentPart{}, false, errors.New("file part has neither URL nor Data")
	case model.PartVideo:
		return contentPart{}, false, errors.New("video parts are not supported by Chat Completions")
	}
	return contentPart{}, false, fmt.Errorf("unknown part type %q", p.Type)
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

// decodeDataURL reads a base64 data: URL; OpenAI takes audio inline only.
func decodeDataURL(u, mime string) ([]byte, string, error) {
	if u == "" {
		return nil, "", errors.New("neither URL nor Data is set")
	}
	rest, ok := strings.CutPrefix(u, "data:")
	if !ok {
		return nil, "", fmt.Errorf("URL %q is not a data: URL; OpenAI takes audio inline, pass Data", u)
	}
	meta, payload, ok := strings.Cut(rest, ",")
	if !ok || !strings.HasSuffix(meta, ";base64") {
		return nil, "", errors.New("data: URL is not base64")
	}
	data, err := base64.StdEncoding.DecodeString(payload)
	if err != nil {
		return nil, "", fmt.Errorf("data: URL: %w", err)
	}
	if mime == "" {
		mime = strings.TrimSuffix(meta, ";base64")
	}
	return data, mime, nil
}

func audioFormat(mime, name string) string {
	switch model.MediaType(mime) {
	case "audio/wav", "audio/x-wav", "audio/wave", "audio/vnd.wave":
		return "wav"
	case "audio/mpeg", "audio/mp3", "audio/mpeg3", "audio/x-mpeg-3":
		return "mp3"
	}
	switch strings.ToLower(path.Ext(name)) {
	case ".wav":
		return "wav"
	case ".mp3":
		return "mp3"
	}
	return ""
}
