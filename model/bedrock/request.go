package bedrock

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"path"
	"strconv"
	"strings"
	"unicode"

	"github.com/agentryhq/agentry/model"
)

type wireRequest struct {
	Messages                     []message        `json:"messages"`
	System                       []block          `json:"system,omitempty"`
	InferenceConfig              *inferenceConfig `json:"inferenceConfig,omitempty"`
	ToolConfig                   *toolConfig      `json:"toolConfig,omitempty"`
	AdditionalModelRequestFields map[string]any   `json:"additionalModelRequestFields,omitempty"`
}

type message struct {
	Role    string  `json:"role"`
	Content []block `json:"content"`
}

// block is a Converse ContentBlock: exactly one field is set.
type block struct {
	Text             string            `json:"text,omitempty"`
	Image            *media            `json:"image,omitempty"`
	Document         *media            `json:"document,omitempty"`
	Video            *media            `json:"video,omitempty"`
	ToolUse          *toolUse          `json:"toolUse,omitempty"`
	ToolResult       *toolResult       `json:"toolResult,omitempty"`
	ReasoningContent *reasoningContent `json:"reasoningContent,omitempty"`
}

type media struct {
	Format string      `json:"format"`
	Name   string      `json:"name,omitempty"`
	Source mediaSource `json:"source"`
}

type mediaSource struct {
	Bytes      []byte      `json:"bytes,omitempty"` // base64 on the wire
	S3Location *s3Location `json:"s3Location,omitempty"`
}

type s3Location struct {
	URI string `json:"uri"`
}

type toolUse struct {
	ToolUseID string          `json:"toolUseId"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
}

type toolResult struct {
	ToolUseID string  `json:"toolUseId"`
	Content   []block `json:"content"`
	Status    string  `json:"status,omitempty"`
}

type reasoningContent struct {
	ReasoningText *reasoningText `json:"reasoningText,omitempty"`
	// RedactedContent is the blob as the wire carries it (base64 text).
	RedactedContent string `json:"redactedContent,omitempty"`
}

type reasoningText struct {
	Text      string `json:"text"`
	Signature string `json:"signature,omitempty"`
}

type inferenceConfig struct {
	MaxTokens     int      `json:"maxTokens,omitempty"`
	Temperature   *float64 `json:"temperature,omitempty"`
	TopP          *float64 `json:"topP,omitempty"`
	StopSequences []string `json:"stopSequences,omitempty"`
}

type toolConfig struct {
	Tools      []tool          `json:"tools"`
	ToolChoice json.RawMessage `json:"toolChoice,omitempty"`
}

type tool struct {
	ToolSpec toolSpec `json:"toolSpec"`
}

type toolSpec struct {
	Name        string      `json:"name"`
	Description string      `json:"description,omitempty"`
	InputSchema inputSchema `json:"inputSchema"`
}

type inputSchema struct {
	JSON json.RawMessage `json:"json"`
}

type plan struct {
	body       []byte
	formatTool string
}

var emptySchema = json.RawMessage(`{"type":"object","properties":{}}`)

func (m *Model) buildRequest(req *model.Request) (plan, error) {
	if req == nil {
		return plan{}, errors.New("bedrock: nil request")
	}
	if req.ParallelToolCalls != nil {
		return plan{}, fmt.Errorf("bedrock: %w: parallel_tool_calls", model.ErrUnsupportedParam)
	}
	p := m.cfg.Params.For(req)
	w := wireRequest{Messages: []message{}}
	if err := mapMessages(req, &w); err != nil {
		return plan{}, err
	}
	uniqueDocumentNames(w.Messages)
	ic := inferenceConfig{MaxTokens: p.MaxTokens, Temperature: p.Temperature, TopP: p.TopP, StopSequences: p.Stop}
	if ic.MaxTokens != 0 || ic.Temperature != nil || ic.TopP != nil || len(ic.StopSequences) > 0 {
		w.InferenceConfig = &ic
	}
	if b := p.ThinkingTokens(); b > 0 {
		w.AdditionalModelRequestFields = map[string]any{"thinking": map[string]any{"type": "enabled", "budget_tokens": b}}
	}
	names := map[string]bool{}
	var tools []tool
	for _, t := range req.Tools {
		if t.Name == "" {
			return plan{}, errors.New("bedrock: a tool has no name")
		}
		schema := t.Parameters
		if len(bytes.TrimSpace(schema)) == 0 {
			schema = emptySchema
		} else if !json.Valid(schema) {
			return plan{}, fmt.Errorf("bedrock: tool %q has parameters that are not valid JSON", t.Name)
		}
		names[t.Name] = true
		tools = append(tools, tool{toolSpec{Name: t.Name, Description: t.Description, InputSchema: inputSchema{schema}}})
	}
	var pl plan
	choice := p.ToolChoice
	if rf := p.ResponseFormat; rf != nil {
		if len(rf.Schema) == 0 || !json.Valid(rf.Schema) {
			return plan{}, fmt.Errorf("bedrock: response format %q needs a valid JSON Schema", rf.Name)
		}
		pl.formatTool = rf.ToolName()
		if names[pl.formatTool] {
			return plan{}, fmt.Errorf("bedrock: response format %q collides with a tool of the same name; rename one", pl.formatTool)
		}
		tools = append(tools, tool{toolSpec{Name: pl.formatTool,
			Description: "Give your final answer by calling this tool; its input is the structured response.",
			InputSchema: inputSchema{rf.Schema}}})
		switch {
		case p.ThinkingTokens() > 0:
			// Claude refuses thinking with a forced tool choice; the tool
			// is offered and its description asks for it.
			choice = "auto"
		case choice == "none" || (choice != "" && choice != "auto" && choice != "required"):
			// The caller's own choice stands this turn.
		case len(names) > 0:
			choice = "required"
		default:
			choice = pl.formatTool
			names[pl.formatTool] = true
		}
	}
	if len(tools) == 0 {
		// Converse refuses toolUse and toolResult blocks without a
		// toolConfig; a call without tools over a conversation that used
		// some declares those, with no tool choice.
		if used := usedTools(req); len(used) > 0 {
			w.ToolConfig = &toolConfig{Tools: used}
		}
	} else {
		w.ToolConfig = &toolConfig{Tools: tools}
		switch choice {
		case "", "none":
			// Converse has no "none": the model is only told the tools exist.
		case "auto":
			w.ToolConfig.ToolChoice = json.RawMessage(`{"auto":{}}`)
		case "required", "any":
			w.ToolConfig.ToolChoice = json.RawMessage(`{"any":{}}`)
		default:
			if !names[choice] {
				return plan{}, fmt.Errorf("bedrock: tool choice %q names no tool in the request", choice)
			}
			b, _ := json.Marshal(map[string]any{"tool": map[string]string{"name": choice}})
			w.ToolConfig.ToolChoice = b
		}
	}
	p.ExtraBody = joinAdditionalFields(&w, p.ExtraBody)
	body, err := json.Marshal(&w)
	if err != nil {
		return plan{}, fmt.Errorf("bedrock: encoding request: %w", err)
	}
	if pl.body, err = p.MergeBody(body); err != nil {
		return plan{}, fmt.Errorf("bedrock: %w", err)
	}
	return pl, nil
}

// usedTools declares the tools the conversation's calls name, in order of
// first use, for a call that offers none.
func usedTools(req *model.Request) []tool {
	var (
		out  []tool
		seen = map[string]bool{}
	)
	for _, m := range req.All() {
		for _, tc := range m.ToolCalls {
			if tc.Name == "" || seen[tc.Name] {
				continue
			}
			seen[tc.Name] = true
			out = append(out, tool{toolSpec{Name: tc.Name, Description: "Called earlier in this conversation; not available now.",
				InputSchema: inputSchema{emptySchema}}})
		}
	}
	return out
}

// joinAdditionalFields moves extra_body's additionalModelRequestFields into
// w's own (the thinking configuration), extra's keys winning, so that
// MergeBody, which sets top-level keys, does not drop the thinking budget.
// It returns the extra body left to merge; extra itself is not changed.
func joinAdditionalFields(w *wireRequest, extra map[string]any) map[string]any {
	v, ok := extra["additionalModelRequestFields"]
	if !ok || w.AdditionalModelRequestFields == nil {
		return extra
	}
	var fields map[string]any
	if b, err := json.Marshal(v); err != nil || json.Unmarshal(b, &fields) != nil || fields == nil {
		return extra // not an object: sent as given, for Converse to judge
	}
	for k, f := range fields {
		w.AdditionalModelRequestFields[k] = f
	}
	rest := make(map[string]any, len(extra)-1)
	for k, e := range extra {
		if k != "additionalModelRequestFields" {
			rest[k] = e
		}
	}
	return rest
}

// mapMessages fills system and messages. Converse wants alternating turns
// ("A conversation must alternate between user and assistant roles"), so
// consecutive messages of one role (tool results, a user message after them,
// two user inputs in a row) share one turn.
func mapMessages(req *model.Request, w *wireRequest) error {
	for i, m := range req.All() {
		msg := &m
		switch msg.Role {
		case model.RoleSystem:
			for _, t := range texts(msg) {
				w.System = append(w.System, block{Text: t})
			}
		case model.RoleUser:
			var blocks []block
			for _, t := range texts(msg) {
				blocks = append(blocks, block{Text: t})
			}
			for j := range msg.Parts {
				if msg.Parts[j].Type == model.PartText {
					continue
				}
				b, err := mediaBlock(&msg.Parts[j])
				if err != nil {
					return fmt.Errorf("bedrock: message %d part %d: %w", i, j, err)
				}
				blocks = append(blocks, b)
			}
			w.appendTurn("user", blocks...)
		case model.RoleAssistant:
			var blocks []block
			for _, th := range msg.Thinking {
				switch {
				case th.Type == "redacted_thinking" && th.Data != "":
					blocks = append(blocks, block{ReasoningContent: &reasoningContent{RedactedContent: th.Data}})
				case th.Signature != "":
					blocks = append(blocks, block{ReasoningContent: &reasoningContent{ReasoningText: &reasoningText{Text: th.Thinking, Signature: th.Signature}}})
				}
			}
			for _, t := range texts(msg) {
				blocks = append(blocks, block{Text: t})
			}
			for _, tc := range msg.ToolCalls {
				input := json.RawMessage(strings.TrimSpace(tc.Arguments))
				if len(input) == 0 || !json.Valid(input) || input[0] != '{' {
					input = json.RawMessage(`{}`)
				}
				blocks = append(blocks, block{ToolUse: &toolUse{ToolUseID: toolUseID(tc.ID), Name: tc.Name, Input: input}})
			}
			w.appendTurn("assistant", blocks...)
		case model.RoleTool:
			if msg.ToolCallID == "" {
				return fmt.Errorf("bedrock: message %d: tool result has no tool_call_id", i)
			}
			tr := &toolResult{ToolUseID: toolUseID(msg.ToolCallID), Content: []block{{Text: strings.Join(texts(msg), "\n")}}}
			if tr.Content[0].Text == "" {
				tr.Content[0].Text = "(empty)"
			}
			if msg.ToolCallError {
				tr.Status = "error"
			}
			w.appendTurn("user", block{ToolResult: tr})
		default:
			return fmt.Errorf("bedrock: message %d: unknown role %q", i, msg.Role)
		}
	}
	return nil
}

// maxToolUseID is the longest toolUseId Converse takes.
const maxToolUseID = 64

// toolUseID returns id as Converse takes a toolUseId ([a-zA-Z0-9_-], at
// most 64 characters; model.SafeToolCallID).
func toolUseID(id string) string { return model.SafeToolCallID(id, maxToolUseID) }

// appendTurn adds blocks to the last message when it has the same role, and
// as a new message otherwise.
func (w *wireRequest) appendTurn(role string, blocks ...block) {
	if len(blocks) == 0 {
		return
	}
	if n := len(w.Messages); n > 0 && w.Messages[n-1].Role == role {
		w.Messages[n-1].Content = append(w.Messages[n-1].Content, blocks...)
		return
	}
	w.Messages = append(w.Messages, message{Role: role, Content: blocks})
}

// texts are a message's texts that are not blank: Converse refuses a blank
// text block ("The text field in the ContentBlock object … is blank").
func texts(msg *model.Message) []string {
	var out []string
	if strings.TrimSpace(msg.Content) != "" {
		out = append(out, msg.Content)
	}
	for _, p := range msg.Parts {
		if p.Type == model.PartText && strings.TrimSpace(p.Text) != "" {
			out = append(out, p.Text)
		}
	}
	return out
}

// Formats Converse accepts, by MIME subtype or file extension.
var (
	imageFormats = map[string]string{"png": "png", "jpeg": "jpeg", "jpg": "jpeg", "gif": "gif", "webp": "webp"}
	docFormats   = map[string]string{"pdf": "pdf", "csv": "csv", "msword": "doc", "doc": "doc", "docx": "docx",
		"vnd.openxmlformats-officedocument.wordprocessingml.document": "docx", "vnd.ms-excel": "xls", "xls": "xls",
		"xlsx": "xlsx", "vnd.openxmlformats-officedocument.spreadsheetml.sheet": "xlsx", "html": "html", "plain": "txt",
		"txt": "txt", "markdown": "md", "md": "md"}
	videoFormats = map[string]string{"mp4": "mp4", "quicktime": "mov", "mov": "mov", "x-matroska": "mkv", "mkv": "mkv",
		"webm": "webm", "x-flv": "flv", "flv": "flv", "mpeg": "mpeg", "mpg": "mpg", "x-ms-wmv": "wmv", "wmv": "wmv", "3gpp": "three_gp"}
)

// mediaBlock maps a part to an image, document or video block: bytes (and
// base64 data: URLs) inline, s3:// URIs by location. Converse takes no other URLs and no audio.
func mediaBlock(p *model.Part) (block, error) {
	var formats map[string]string
	switch p.Type {
	case model.PartImage:
		formats = imageFormats
	case model.PartFile:
		formats = docFormats
	case model.PartVideo:
		formats = videoFormats
	case model.PartAudio:
		return block{}, errors.New("audio parts are not supported by Bedrock Converse")
	default:
		return block{}, fmt.Errorf("unknown part type %q", p.Type)
	}
	if rest, ok := strings.CutPrefix(p.URL, "data:"); ok && len(p.Data) == 0 {
		meta, payload, _ := strings.Cut(rest, ",")
		dataMIME, isBase64 := strings.CutSuffix(meta, ";base64")
		data, err := base64.StdEncoding.DecodeString(payload)
		if !isBase64 || err != nil {
			return block{}, fmt.Errorf("%s part: data: URL must be base64 (data:image/png;base64,...)", p.Type)
		}
		inline := *p
		inline.URL, inline.Data = "", data
		if inline.MIMEType == "" {
			inline.MIMEType = dataMIME
		}
		p = &inline
	}
	mt := p.MIMEType
	if mt == "" && len(p.Data) > 0 {
		mt = http.DetectContentType(p.Data)
	}
	if mt == "" {
		mt = mime.TypeByExtension(path.Ext(p.URL))
	}
	mt, _, _ = strings.Cut(mt, ";")
	_, sub, _ := strings.Cut(mt, "/")
	format := formats[strings.ToLower(sub)]
	if format == "" {
		format = formats[strings.TrimPrefix(strings.ToLower(path.Ext(p.Name+p.URL)), ".")]
	}
	if format == "" {
		return block{}, fmt.Errorf("%s part: Bedrock cannot take MIME type %q; set Part.MIMEType to a supported one", p.Type, mt)
	}
	md := &media{Format: format}
	switch {
	case len(p.Data) > 0:
		md.Source.Bytes = p.Data
	case strings.HasPrefix(p.URL, "s3://"):
		md.Source.S3Location = &s3Location{URI: p.URL}
	default:
		return block{}, fmt.Errorf("%s part: Bedrock takes bytes (Part.Data) or an s3:// URI, not %q", p.Type, p.URL)
	}
	switch p.Type {
	case model.PartImage:
		return block{Image: md}, nil
	case model.PartVideo:
		return block{Video: md}, nil
	}
	md.Name = documentName(p.Name)
	return block{Document: md}, nil
}

// uniqueDocumentNames renames the documents whose name (in any case) an
// earlier one of the request has: Converse refuses a request with duplicate
// document names, across all its turns, and two unnamed files or one file
// attached twice would share one. The first keeps its name, the next get
// "-2", "-3", ….
func uniqueDocumentNames(msgs []message) {
	used := map[string]bool{}
	for i := range msgs {
		for j := range msgs[i].Content {
			d := msgs[i].Content[j].Document
			if d == nil {
				continue
			}
			name := d.Name
			for n := 2; used[strings.ToLower(name)]; n++ {
				suffix := "-" + strconv.Itoa(n)
				name = strings.TrimSpace(d.Name[:min(len(d.Name), 200-len(suffix))]) + suffix
			}
			used[strings.ToLower(name)] = true
			d.Name = name
		}
	}
}

// documentName keeps the characters Converse allows in a document name
// (letters, digits, hyphens, parentheses, square brackets and whitespace, no
// more than one in a row), at most 200 of them.
func documentName(name string) string {
	name = strings.TrimSuffix(name, path.Ext(name))
	var b strings.Builder
	space := false
	for _, r := range name {
		switch {
		case r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-()[]", r):
			if space && b.Len() > 0 {
				b.WriteByte(' ')
			}
			space = false
			b.WriteRune(r)
		case unicode.IsSpace(r):
			space = true
		}
		if b.Len() >= 200 {
			break
		}
	}
	if b.Len() == 0 {
		return "document"
	}
	return strings.TrimSpace(b.String()[:min(b.Len(), 200)])
}
