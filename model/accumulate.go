package model

import (
	"sort"
	"strings"
)

// Accumulator assembles streamed chunks into a Response. The zero value is ready.
type Accumulator struct {
	content   strings.Builder
	reasoning strings.Builder
	calls     map[int]*partialCall
	thinking  []ThinkingBlock
	provider  map[string]any
	usage     Usage
	stop      string
	modelID   string
}

type partialCall struct {
	id, name, signature string
	args                strings.Builder
}

// Add folds one chunk in.
func (a *Accumulator) Add(c *Chunk) {
	if c == nil {
		return
	}
	a.content.WriteString(c.Content)
	a.reasoning.WriteString(c.ReasoningContent)
	for _, d := range c.ToolCalls {
		if a.calls == nil {
			a.calls = make(map[int]*partialCall)
		}
		p := a.calls[d.Index]
		if p == nil {
			p = &partialCall{}
			a.calls[d.Index] = p
		}
		if d.ID != "" {
			p.id = d.ID
		}
		if d.Name != "" {
			p.name += d.Name
		}
		if d.ThoughtSignature != "" {
			p.signature = d.ThoughtSignature
		}
		p.args.WriteString(d.Arguments)
	}
	if c.Thinking != nil {
		a.thinking = append(a.thinking, *c.Thinking)
	}
	for k, v := range c.ProviderData {
		if a.provider == nil {
			a.provider = make(map[string]any)
		}
		a.provider[k] = v
	}
	if c.Usage != nil {
		a.usage = *c.Usage
	}
	if c.StopReason != "" {
		a.stop = c.StopReason
	}
	if c.ModelID != "" {
		a.modelID = c.ModelID
	}
}

// Response returns the assembled assistant response.
func (a *Accumulator) Response() *Response {
	r := a.Value()
	return &r
}

// Value returns what Response returns, as a value: a caller that keeps it in
// a variable of its own saves the allocation (a Response is ~350 bytes, one a
// model call).
func (a *Accumulator) Value() Response {
	msg := Message{
		Role:             RoleAssistant,
		Content:          a.content.String(),
		ReasoningContent: a.reasoning.String(),
		Thinking:         a.thinking,
		ProviderData:     a.provider,
	}
	if len(a.calls) > 0 {
		idx := make([]int, 0, len(a.calls))
		for i := range a.calls {
			idx = append(idx, i)
		}
		sort.Ints(idx)
		for _, i := range idx {
			p := a.calls[i]
			msg.ToolCalls = append(msg.ToolCalls, ToolCall{ID: p.id, Name: p.name, Arguments: p.args.String(), ThoughtSignature: p.signature})
		}
	}
	u := a.usage
	if u.TotalTokens == 0 {
		u.TotalTokens = u.InputTokens + u.OutputTokens
	}
	return Response{Message: msg, Usage: u, StopReason: a.stop, ModelID: a.modelID}
}
