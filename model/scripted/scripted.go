package scripted

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"strings"
	"time"

	"github.com/agentryhq/agentry/model"
)

// Exhausted says what happens when a conversation asks for more turns than the
// script has for it.
type Exhausted string

// Behaviours when the script runs out.
const (
	// RepeatLast answers with the last applicable turn again (the default). A last
	// turn with tool calls therefore loops forever, which is how tests exercise
	// tool_call_limit.
	RepeatLast Exhausted = "repeat_last"
	// Cycle starts again from the first applicable turn.
	Cycle Exhausted = "cycle"
	// Fail answers with a *model.ProviderError of kind model.ErrBadRequest
	// ("script exhausted") naming the position asked for.
	Fail Exhausted = "error"
)

// ToolCall is one scripted tool call.
type ToolCall struct {
	// ID is the call id; empty means "call_<turn>_<index>", unique within a run.
	ID   string `json:"id,omitempty" yaml:"id,omitempty"`
	Name string `json:"name" yaml:"name"`
	// Args is marshalled to JSON as the call's arguments.
	Args any `json:"args,omitempty" yaml:"args,omitempty"`
	// RawArgs, when set, is sent verbatim instead of Args, so a script can send
	// malformed JSON on purpose.
	RawArgs string `json:"raw_args,omitempty" yaml:"raw_args,omitempty"`
}

// Turn is one scripted model answer: a content reply (optionally with reasoning)
// or a set of tool calls, optionally ending in an error.
type Turn struct {
	// Match, when set, restricts the turn to conversations whose last user
	// message contains it (case-insensitive).
	Match     string     `json:"match,omitempty" yaml:"match,omitempty"`
	Content   string     `json:"content,omitempty" yaml:"content,omitempty"`
	Reasoning string     `json:"reasoning,omitempty" yaml:"reasoning,omitempty"`
	ToolCalls []ToolCall `json:"tool_calls,omitempty" yaml:"tool_calls,omitempty"`
	// Error, when set, fails the request after the turn's chunks were streamed
	// (a provider failing mid-stream). ErrorKind picks the sentinel: rate_limit,
	// server, auth, context_length, bad_request or malformed (the default).
	Error     string `json:"error,omitempty" yaml:"error,omitempty"`
	ErrorKind string `json:"error_kind,omitempty" yaml:"error_kind,omitempty"`
}

// Config builds a scripted model. Zero values take the documented defaults.
type Config struct {
	// ID is the model id reported by Info; default "scripted".
	ID string
	// Provider is reported by Info; default "Scripted".
	Provider string
	Turns    []Turn
	// OnExhausted defaults to RepeatLast.
	OnExhausted Exhausted
	// Latency is slept before each request's first chunk; ChunkLatency before
	// every streamed chunk. Both honour context cancellation.
	Latency      time.Duration
	ChunkLatency time.Duration
}

// Model is a scripted model. It holds no per-conversation state: the turn to
// answer is derived from the request alone, so one Model serves any number of
// concurrent conversations deterministically.
//
// Position rule: among the turns applicable to the request (Match empty or
// contained in the last user message), the answer is the k-th, where k is the
// number of assistant messages after the last user message. A conversation
// therefore starts at its first applicable turn on every new user message and
// advances one turn per model call within a run (tool-call loops, continued
// runs).
type Model struct {
	info         model.Info
	turns        []prepared
	hasMatch     bool
	onExhausted  Exhausted
	latency      time.Duration
	chunkLatency time.Duration
}

type prepared struct {
	match     string // lower-cased
	content   []string
	reasoning []string
	calls     []preparedCall
	err       *model.ProviderError
	nChunks   int
	output    int // output tokens
}

type preparedCall struct {
	id, name string
	frags    []string
}

var _ model.Model = (*Model)(nil)

// New validates cfg and prepares the script.
func New(cfg Config) (*Model, error) {
	if len(cfg.Turns) == 0 {
		return nil, errors.New("scripted: the script has no turns; add at least one turn")
	}
	switch cfg.OnExhausted {
	case "":
		cfg.OnExhausted = RepeatLast
	case RepeatLast, Cycle, Fail:
	default:
		return nil, fmt.Errorf("scripted: unknown on_exhausted %q (want repeat_last, cycle or error)", cfg.OnExhausted)
	}
	if cfg.Latency < 0 || cfg.ChunkLatency < 0 {
		return nil, errors.New("scripted: latencies must not be negative")
	}
	m := &Model{
		info:         model.Info{ID: cfg.ID, Name: "Scripted", Provider: cfg.Provider},
		onExhausted:  cfg.OnExhausted,
		latency:      cfg.Latency,
		chunkLatency: cfg.ChunkLatency,
	}
	if m.info.ID == "" {
		m.info.ID = "scripted"
	}
	if m.info.Provider == "" {
		m.info.Provider = "Scripted"
	}
	for i, t := range cfg.Turns {
		p, err := prepare(t)
		if err != nil {
			return nil, fmt.Errorf("scripted: turn %d: %w", i, err)
		}
		if p.match != "" {
			m.hasMatch = true
		}
		m.turns = append(m.turns, p)
	}
	return m, nil
}

// MustNew is New for scripts known to be valid (tests and examples); it panics
// on error.
func MustNew(cfg Config) *Model {
	m, err := New(cfg)
	if err != nil {
		panic(err)
	}
	return m
}

// Reply is a one-turn script answering text.
func Reply(text string) *Model { return MustNew(Config{Turns: []Turn{{Content: text}}}) }

func prepare(t Turn) (prepared, error) {
	p := prepared{match: strings.ToLower(t.Match)}
	if t.Content == "" && t.Reasoning == "" && len(t.ToolCalls) == 0 && t.Error == "" {
		return p, errors.New("a turn needs content, reasoning, tool_calls or error")
	}
	p.content = words(t.Content)
	p.reasoning = words(t.Reasoning)
	p.output = tokens(t.Content) + tokens(t.Reasoning)
	for i, c := range t.ToolCalls {
		if c.Name == "" {
			return p, fmt.Errorf("tool call %d has no name", i)
		}
		args := c.RawArgs
		if args == "" {
			if c.Args == nil {
				args = "{}"
			} else {
				b, err := json.Marshal(normalize(c.Args))
				if err != nil {
					return p, fmt.Errorf("tool call %d (%s): args: %w", i, c.Name, err)
				}
				args = string(b)
			}
		}
		p.calls = append(p.calls, preparedCall{id: c.ID, name: c.Name, frags: fragments(args, 16)})
		p.output += tokens(c.Name) + tokens(args)
	}
	if t.Error != "" {
		kind, err := errorKind(t.ErrorKind)
		if err != nil {
			return p, err
		}
		p.err = &model.ProviderError{Provider: "scripted", Kind: kind, Message: t.Error}
	}
	for _, c := range p.calls {
		p.nChunks += len(c.frags)
	}
	p.nChunks += len(p.content) + len(p.reasoning) + 1 // final usage chunk
	return p, nil
}

func errorKind(s string) (error, error) {
	switch s {
	case "", "malformed":
		return model.ErrMalformedResponse, nil
	case "rate_limit":
		return model.ErrRateLimit, nil
	case "server":
		return model.ErrServer, nil
	case "auth":
		return model.ErrAuth, nil
	case "context_length":
		return model.ErrContextLength, nil
	case "bad_request":
		return model.ErrBadRequest, nil
	}
	return nil, fmt.Errorf("unknown error_kind %q (want rate_limit, server, auth, context_length, bad_request or malformed)", s)
}

// normalize turns YAML's map[any]any (older decoders) into JSON-encodable maps.
func normalize(v any) any {
	switch x := v.(type) {
	case map[any]any:
		m := make(map[string]any, len(x))
		for k, val := range x {
			m[fmt.Sprint(k)] = normalize(val)
		}
		return m
	case map[string]any:
		for k, val := range x {
			x[k] = normalize(val)
		}
		return x
	case []any:
		for i, val := range x {
			x[i] = normalize(val)
		}
		return x
	}
	return v
}

// words splits s into chunks of one word each, keeping the whitespace that
// follows a word with it, so concatenating the chunks gives s back.
func words(s string) []string {
	if s == "" {
		return nil
	}
	var out []string
	start := 0
	inSpace := false
	for i, r := range s {
		space := r == ' ' || r == '\n' || r == '\t'
		if !space && inSpace {
			out = append(out, s[start:i])
			start = i
		}
		inSpace = space
	}
	return append(out, s[start:])
}

// fragments splits s into pieces of at most n bytes (at byte boundaries, which
// may split a UTF-8 sequence: consumers must concatenate before decoding).
func fragments(s string, n int) []string {
	if len(s) <= n {
		return []string{s}
	}
	out := make([]string, 0, len(s)/n+1)
	for len(s) > n {
		out = append(out, s[:n])
		s = s[n:]
	}
	return append(out, s)
}

// tokens is the deterministic token estimate: one token per started 4 bytes.
func tokens(s string) int { return (len(s) + 3) / 4 }

// Info reports the scripted model's identity.
func (m *Model) Info() model.Info { return m.info }

// pick returns the turn for req and its position k.
func (m *Model) pick(req *model.Request) (*prepared, int, error) {
	// k counts the assistant messages after the last user message.
	k := 0
	var user string
	for _, msg := range req.Backward() {
		if msg.Role == model.RoleUser {
			if m.hasMatch {
				user = strings.ToLower(userText(&msg))
			}
			break
		}
		if msg.Role == model.RoleAssistant {
			k++
		}
	}
	var applicable []int
	if m.hasMatch {
		for i := range m.turns {
			if mt := m.turns[i].match; mt == "" || strings.Contains(user, mt) {
				applicable = append(applicable, i)
			}
		}
		if len(applicable) == 0 {
			return nil, k, &model.ProviderError{Provider: "scripted", Kind: model.ErrBadRequest,
				Message: "no scripted turn matches the last user message; add a turn without match"}
		}
	}
	n := len(m.turns)
	if applicable != nil {
		n = len(applicable)
	}
	idx := k
	if idx >= n {
		switch m.onExhausted {
		case Fail:
			return nil, k, &model.ProviderError{Provider: "scripted", Kind: model.ErrBadRequest,
				Message: fmt.Sprintf("script exhausted: asked for turn %d of %d", k+1, n)}
		case Cycle:
			idx = k % n
		default:
			idx = n - 1
		}
	}
	if applicable != nil {
		idx = applicable[idx]
	}
	return &m.turns[idx], k, nil
}

func userText(msg *model.Message) string {
	if len(msg.Parts) == 0 {
		return msg.Content
	}
	var b strings.Builder
	b.WriteString(msg.Content)
	for _, p := range msg.Parts {
		if p.Type == model.PartText {
			b.WriteString(p.Text)
		}
	}
	return b.String()
}

func inputTokens(req *model.Request) int {
	n := 0
	for _, msg := range req.All() {
		n += tokens(msg.Content) + 4
		for _, p := range msg.Parts {
			n += tokens(p.Text)
		}
		for _, c := range msg.ToolCalls {
			n += tokens(c.Arguments)
		}
	}
	return n
}

func callID(p *preparedCall, k, i int) string {
	if p.id != "" {
		return p.id
	}
	return fmt.Sprintf("call_%d_%d", k, i)
}

// Stream yields the scripted turn: reasoning and content word by word, then each
// tool call's arguments in fragments of at most 16 bytes, then a final chunk with
// usage, stop reason and model id. A turn with Error yields the error last.
func (m *Model) Stream(ctx context.Context, req *model.Request) iter.Seq2[*model.Chunk, error] {
	return func(yield func(*model.Chunk, error) bool) {
		t, k, err := m.pick(req)
		if err == nil {
			err = sleep(ctx, m.latency)
		}
		if err == nil {
			err = ctx.Err()
		}
		if err != nil {
			yield(nil, err)
			return
		}
		chunks := make([]model.Chunk, t.nChunks)
		n := 0
		emit := func() bool {
			if m.chunkLatency > 0 {
				if err := sleep(ctx, m.chunkLatency); err != nil {
					yield(nil, err)
					return false
				}
			}
			c := &chunks[n]
			n++
			return yield(c, nil)
		}
		for _, w := range t.reasoning {
			chunks[n].ReasoningContent = w
			if !emit() {
				return
			}
		}
		for _, w := range t.content {
			chunks[n].Content = w
			if !emit() {
				return
			}
		}
		if len(t.calls) > 0 {
			deltas := make([]model.ToolCallDelta, t.nChunks)
			for i := range t.calls {
				c := &t.calls[i]
				for j, f := range c.frags {
					d := &deltas[n]
					d.Index, d.Arguments = i, f
					if j == 0 {
						d.ID, d.Name = callID(c, k, i), c.name
					}
					chunks[n].ToolCalls = deltas[n : n+1 : n+1]
					if !emit() {
						return
					}
				}
			}
		}
		if t.err != nil {
			e := *t.err
			yield(nil, &e)
			return
		}
		last := &chunks[n]
		in := inputTokens(req)
		last.Usage = &model.Usage{InputTokens: in, OutputTokens: t.output, TotalTokens: in + t.output}
		last.StopReason = "stop"
		if len(t.calls) > 0 {
			last.StopReason = "tool_calls"
		}
		last.ModelID = m.info.ID
		emit()
	}
}

// Invoke returns the scripted turn as one response (no latency per chunk).
func (m *Model) Invoke(ctx context.Context, req *model.Request) (*model.Response, error) {
	t, k, err := m.pick(req)
	if err == nil {
		err = sleep(ctx, m.latency)
	}
	if err == nil {
		err = ctx.Err()
	}
	if err != nil {
		return nil, err
	}
	if t.err != nil {
		e := *t.err
		return nil, &e
	}
	resp := &model.Response{
		Message: model.Message{
			Role:             model.RoleAssistant,
			Content:          strings.Join(t.content, ""),
			ReasoningContent: strings.Join(t.reasoning, ""),
		},
		StopReason: "stop",
		ModelID:    m.info.ID,
	}
	for i := range t.calls {
		c := &t.calls[i]
		resp.Message.ToolCalls = append(resp.Message.ToolCalls,
			model.ToolCall{ID: callID(c, k, i), Name: c.name, Arguments: strings.Join(c.frags, "")})
		resp.StopReason = "tool_calls"
	}
	in := inputTokens(req)
	resp.Usage = model.Usage{InputTokens: in, OutputTokens: t.output, TotalTokens: in + t.output}
	return resp, nil
}

func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// ReadsHistory reports that the model reads a request's History
// (model.HistoryReader): the agent shares its history without a copy.
func (m *Model) ReadsHistory() bool { return true }
