package gemini

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"mime"
	"net/http"
	"path"
	"strings"

	"github.com/agentryhq/agentry/model"
)

// syntheticIDPrefix marks call ids Gemini did not send; they stay local.
const syntheticIDPrefix = "gcall_"

type wireRequest struct {
	Contents          []content         `json:"contents"`
	SystemInstruction *content          `json:"systemInstruction,omitempty"`
	Tools             []wireTool        `json:"tools,omitempty"`
	ToolConfig        *toolConfig       `json:"toolConfig,omitempty"`
	GenerationConfig  *generationConfig `json:"generationConfig,omitempty"`
}

type content struct {
	Role  string `json:"role,omitempty"`
	Parts []part `json:"parts"`
}

type part struct {
	Text             string            `json:"text,omitempty"`
	Thought          bool              `json:"thought,omitempty"`
	InlineData       *blob             `json:"inlineData,omitempty"`
	FileData         *fileData         `json:"fileData,omitempty"`
	FunctionCall     *functionCall     `json:"functionCall,omitempty"`
	FunctionResponse *functionResponse `json:"functionResponse,omitempty"`
	ThoughtSignature string            `json:"thoughtSignature,omitempty"`
}

type blob struct {
	MIMEType string `json:"mimeType"`
	Data     string `json:"data"`
}

type fileData struct {
	MIMEType string `json:"mimeType,omitempty"`
	FileURI  string `json:"fileUri"`
}

type functionCall struct {
	ID   string          `json:"id,omitempty"`
	Name string          `json:"name"`
	Args json.RawMessage `json:"args,omitempty"`
}

type functionResponse struct {
	ID       string          `json:"id,omitempty"`
	Name     string          `json:"name"`
	Response json.RawMessage `json:"response"`
}

type wireTool struct {
	FunctionDeclarations []functionDeclaration `json:"functionDeclarations"`
}

type functionDeclaration struct {
	Name                 string          `json:"name"`
	Description          string          `json:"description,omitempty"`
	ParametersJSONSchema json.RawMessage `json:"parametersJsonSchema,omitempty"`
}

type toolConfig struct {
	FunctionCallingConfig functionCallingConfig `json:"functionCallingConfig"`
}

type functionCallingConfig struct {
	Mode                 string   `json:"mode"`
	AllowedFunctionNames []string `json:"allowedFunctionNames,omitempty"`
}

type generationConfig struct {
	Temperature        *float64        `json:"temperature,omitempty"`
	TopP               *float64        `json:"topP,omitempty"`
	MaxOutputTokens    int             `json:"maxOutputTokens,omitempty"`
	StopSequences      []string        `json:"stopSequences,omitempty"`
	Seed               *int64          `json:"seed,omitempty"`
	PresencePenalty    *float64        `json:"presencePenalty,omitempty"`
	FrequencyPenalty   *float64        `json:"frequencyPenalty,omitempty"`
	ResponseMIMEType   string          `json:"responseMimeType,omitempty"`
	ResponseJSONSchema json.RawMessage `json:"responseJsonSchema,omitempty"`
	ThinkingConfig     *thinkingConfig `json:"thinkingConfig,omitempty"`
}

type thinkingConfig struct {
	// ThinkingBudget is a pointer: 0 turns thinking off on models that allow it.
	ThinkingBudget  *int   `json:"thinkingBudget,omitempty"`
	IncludeThoughts bool   `json:"includeThoughts,omitempty"`
	ThinkingLevel   string `json:"thinkingLevel,omitempty"`
}

func (m *Model) buildRequest(req *model.Request) ([]byte, error) {
	if req == nil {
		return nil, errors.New("gemini: nil request")
	}
	if req.ParallelToolCalls != nil {
		return nil, fmt.Errorf("gemini: %w: parallel_tool_calls (Gemini decides how many functions to call)", model.ErrUnsupportedParam)
	}
	p := m.cfg.Params.For(req)
	w := wireRequest{Contents: []content{}}
	if err := mapMessages(req, &w); err != nil {
		return nil, err
	}
	if strings.HasPrefix(strings.ToLower(m.id), "gemini-3") {
		signCalls(w.Contents)
	}
	names := map[string]bool{}
	if len(req.Tools) > 0 {
		t := wireTool{}
		for _, spec := range req.Tools {
			if spec.Name == "" {
				return nil, errors.New("gemini: a tool has no name")
			}
			if len(spec.Parameters) > 0 && !json.Valid(spec.Parameters) {
				return nil, fmt.Errorf("gemini: tool %q has parameters that are not valid JSON", spec.Name)
			}
			names[spec.Name] = true
			t.FunctionDeclarations = append(t.FunctionDeclarations, functionDeclaration{
				Name: spec.Name, Description: spec.Description, ParametersJSONSchema: spec.Parameters,
			})
		}
		w.Tools = []wireTool{t}
		switch p.ToolChoice {
		case "":
		case "auto":
			w.ToolConfig = &toolConfig{functionCallingConfig{Mode: "AUTO"}}
		case "none":
			w.ToolConfig = &toolConfig{functionCallingConfig{Mode: "NONE"}}
		case "required", "any":
			w.ToolConfig = &toolConfig{functionCallingConfig{Mode: "ANY"}}
		default:
			if !names[p.ToolChoice] {
				return nil, fmt.Errorf("gemini: tool choice %q names no tool in the request", p.ToolChoice)
			}
			w.ToolConfig = &toolConfig{functionCallingConfig{Mode: "ANY", AllowedFunctionNames: []string{p.ToolChoice}}}
		}
	}
	g := generationConfig{
		Temperature: p.Temperature, TopP: p.TopP, MaxOutputTokens: p.MaxTokens, StopSequences: p.Stop,
		Seed: p.Seed, PresencePenalty: p.PresencePenalty, FrequencyPenalty: p.FrequencyPenalty,
	}
	if rf := p.ResponseFormat; rf != nil {
		g.ResponseMIMEType = "application/json"
		if len(rf.Schema) > 0 {
			if !json.Valid(rf.Schema) {
				return nil, fmt.Errorf("gemini: response format %q: schema is not valid JSON", rf.Name)
			}
			g.ResponseJSONSchema = rf.Schema
		}
	}
	if p.ThinkingBudget != nil || p.IncludeThoughts || p.ReasoningEffort != "" {
		tc := &thinkingConfig{IncludeThoughts: p.IncludeThoughts, ThinkingLevel: strings.ToUpper(p.ReasoningEffort)}
		if b := p.ThinkingBudget; b != nil {
			v := *b // 0 turns thinking off
			tc.ThinkingBudget = &v
		}
		g.ThinkingConfig = tc
	}
	if !isZero(g) {
		w.GenerationConfig = &g
	}
	if w.GenerationConfig != nil {
		p.ExtraBody = joinGenerationConfig(w.GenerationConfig, p.ExtraBody)
	}
	data, err := json.Marshal(&w)
	if err != nil {
		return nil, fmt.Errorf("gemini: encoding request: %w", err)
	}
	if data, err = p.MergeBody(data); err != nil {
		return nil, fmt.Errorf("gemini: %w", err)
	}
	return data, nil
}

// joinGenerationConfig returns extra with its generationConfig (settings
// with no parameter of their own: topK, responseModalities, …) joined to
// the one the parameters built, extra's keys winning; MergeBody sets
// top-level keys and would otherwise drop temperature, the response schema
// and thinking. extra itself is not changed.
func joinGenerationConfig(own *generationConfig, extra map[string]any) map[string]any {
	v, ok := extra["generationConfig"]
	if !ok {
		return extra
	}
	var fields map[string]json.RawMessage
	if b, err := json.Marshal(v); err != nil || json.Unmarshal(b, &fields) != nil || fields == nil {
		return extra // not an object: sent as given, for Gemini to judge
	}
	var joined map[string]json.RawMessage
	b, _ := json.Marshal(own)
	if json.Unmarshal(b, &joined) != nil {
		return extra
	}
	maps.Copy(joined, fields)
	out := maps.Clone(extra)
	out["generationConfig"] = joined
	return out
}

func isZero(g generationConfig) bool {
	b, _ := json.Marshal(g)
	return string(b) == "{}"
}

// mapMessages turns the conversation into contents: system messages become
// the systemInstruction, consecutive tool results one user turn of
// functionResponse parts.
func mapMessages(req *model.Request, w *wireRequest) error {
	callNames := map[string]string{} // call id → function name, for results without ToolName
	var system []part
	for i, m := range req.All() {
		msg := &m
		switch msg.Role {
		case model.RoleSystem:
			for _, t := range textsOf(msg) {
				system = append(system, part{Text: t})
			}
		case model.RoleUser:
			parts, err := userParts(msg)
			if err != nil {
				return fmt.Errorf("gemini: message %d: %w", i, err)
			}
			if len(parts) == 0 {
				continue
			}
			w.Contents = append(w.Contents, content{Role: "user", Parts: parts})
		case model.RoleAssistant:
			var parts []part
			sig, _ := msg.ProviderData["thought_signature"].(string)
			for _, t := range textsOf(msg) {
				parts = append(parts, part{Text: t})
			}
			if sig != "" && len(parts) > 0 {
				parts[len(parts)-1].ThoughtSignature = sig
			}
			for _, tc := range msg.ToolCalls {
				args := json.RawMessage(strings.TrimSpace(tc.Arguments))
				if len(args) == 0 || !json.Valid(args) || args[0] != '{' {
					args = json.RawMessage(`{}`)
				}
				fc := &functionCall{Name: tc.Name, Args: args}
				if !strings.HasPrefix(tc.ID, syntheticIDPrefix) {
					fc.ID = tc.ID
				}
				callNames[tc.ID] = tc.Name
				parts = append(parts, part{FunctionCall: fc, ThoughtSignature: tc.ThoughtSignature})
			}
			if len(parts) == 0 {
				continue
			}
			w.Contents = append(w.Contents, content{Role: "model", Parts: parts})
		case model.RoleTool:
			name := msg.ToolName
			if name == "" {
				name = callNames[msg.ToolCallID]
			}
			if name == "" {
				return fmt.Errorf("gemini: message %d: tool result names no tool (set ToolName or answer a call in the conversation)", i)
			}
			fr := &functionResponse{Name: name, Response: resultObject(strings.Join(textsOf(msg), "\n"), msg.ToolCallError)}
			if !strings.HasPrefix(msg.ToolCallID, syntheticIDPrefix) {
				fr.ID = msg.ToolCallID
			}
			p := part{FunctionResponse: fr}
			if n := len(w.Contents); n > 0 && w.Contents[n-1].Role == "user" && w.Contents[n-1].Parts[0].FunctionResponse != nil {
				w.Contents[n-1].Parts = append(w.Contents[n-1].Parts, p)
			} else {
				w.Contents = append(w.Contents, content{Role: "user", Parts: []part{p}})
			}
		default:
			return fmt.Errorf("gemini: message %d: unknown role %q", i, msg.Role)
		}
	}
	if len(system) > 0 {
		w.SystemInstruction = &content{Parts: system}
	}
	return nil
}

// skipSignature is Google's documented stand-in for a thought signature
// that does not exist: calls another model made, or whose signature was lost.
const skipSignature = "skip_thought_signature_validator"

// signCalls gives the first function call of each model turn that has no
// thought signature the stand-in: Gemini 3 refuses a turn whose first call
// has none ("Function call is missing a thought_signature"); the later
// calls of a parallel turn carry none from Gemini either.
func signCalls(contents []content) {
	for i := range contents {
		if contents[i].Role != "model" {
			continue
		}
		for j := range contents[i].Parts {
			p := &contents[i].Parts[j]
			if p.FunctionCall == nil {
				continue
			}
			if p.ThoughtSignature == "" {
				p.ThoughtSignature = skipSignature
			}
			break
		}
	}
}

// resultObject wraps a tool's text as the functionResponse's response object,
// the way Agno does ({"result": …}); a failed call reports {"error": …}.
func resultObject(text string, failed bool) json.RawMessage {
	key := "result"
	if failed {
		key = "error"
	}
	b, _ := json.Marshal(map[string]string{key: text})
	return b
}

func textsOf(msg *model.Message) []string {
	var out []string
	if msg.Content != "" {
		out = append(out, msg.Content)
	}
	for _, p := range msg.Parts {
		if p.Type == model.PartText && p.Text != "" {
			out = append(out, p.Text)
		}
	}
	return out
}

func userParts(msg *model.Message) ([]part, error) {
	var out []part
	if msg.Content != "" {
		out = append(out, part{Text: msg.Content})
	}
	for i := range msg.Parts {
		p := &msg.Parts[i]
		switch p.Type {
		case model.PartText:
			if p.Text != "" {
				out = append(out, part{Text: p.Text})
			}
		case model.PartImage, model.PartAudio, model.PartVideo, model.PartFile:
			wp, err := mediaPart(p)
			if err != nil {
				return nil, fmt.Errorf("part %d: %w", i, err)
			}
			out = append(out, wp)
		default:
			return nil, fmt.Errorf("part %d: unknown part type %q", i, p.Type)
		}
	}
	return out, nil
}

// mediaPart sends bytes inline and URLs (gs://, https://, Files API URIs) as
// fileData; Gemini reads images, audio, video and PDFs either way.
func mediaPart(p *model.Part) (part, error) {
	mt := p.MIMEType
	switch {
	case len(p.Data) > 0:
		if mt == "" {
			mt = http.DetectContentType(p.Data)
		}
		return part{InlineData: &blob{MIMEType: model.MediaType(mt), Data: base64.StdEncoding.EncodeToString(p.Data)}}, nil
	case strings.HasPrefix(p.URL, "data:"):
		meta, payload, ok := strings.Cut(strings.TrimPrefix(p.URL, "data:"), ",")
		if !ok || !strings.HasSuffix(meta, ";base64") {
			return part{}, errors.New("data: URL is not base64")
		}
		if _, err := base64.StdEncoding.DecodeString(payload); err != nil {
			return part{}, fmt.Errorf("data: URL: %w", err)
		}
		if mt == "" {
			mt = strings.TrimSuffix(meta, ";base64")
		}
		return part{InlineData: &blob{MIMEType: model.MediaType(mt), Data: payload}}, nil
	case p.URL != "":
		if mt == "" {
			mt = mime.TypeByExtension(path.Ext(strings.SplitN(p.URL, "?", 2)[0]))
			mt, _, _ = strings.Cut(mt, ";")
		}
		if mt == "" {
			return part{}, fmt.Errorf("%s part %q: Gemini needs its MIME type; set Part.MIMEType", p.Type, p.URL)
		}
		return part{FileData: &fileData{MIMEType: model.MediaType(mt), FileURI: p.URL}}, nil
	}
	return part{}, fmt.Errorf("%s part has neither URL nor Data", p.Type)
}

// compact is used by tests and the decoder to normalise raw JSON.
func compact(raw json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return string(raw)
	}
	return b.String()
}
