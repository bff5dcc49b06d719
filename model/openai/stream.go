package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"iter"
	"mime"
	"strconv"
	"strings"

	"github.com/agentryhq/agentry/internal/clip"
	"github.com/agentryhq/agentry/internal/sse"
	"github.com/agentryhq/agentry/model"
)

// Stream sends the request with stream: true and yields chunks as they arrive.
// Breaking out of the loop closes the response body.
func (m *Model) Stream(ctx context.Context, req *model.Request) iter.Seq2[*model.Chunk, error] {
	return func(yield func(*model.Chunk, error) bool) {
		ctx, cancel := m.params.WithTimeout(ctx)
		defer cancel()
		body, err := m.buildRequest(req, true)
		if err != nil {
			yield(nil, err)
			return
		}
		resp, secrets, err := m.post(ctx, body, true)
		if err != nil {
			yield(nil, err)
			return
		}
		defer resp.Body.Close()
		if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt == "application/json" {
			// Some servers and proxies ignore stream: true and answer with
			// one JSON document (a completion or an error object).
			r, err := m.readResponse(ctx, resp.Body, secrets)
			if err != nil {
				yield(nil, err)
				return
			}
			yield(responseChunk(r), nil)
			return
		}
		for c, err := range m.decodeStream(resp.Body, secrets...) {
			if err != nil && ctx.Err() != nil {
				// A read cut short by cancellation is the caller's doing, not a
				// malformed stream.
				err = fmt.Errorf("openai: stream: %w", ctx.Err())
			}
			if !yield(c, err) || err != nil {
				return
			}
		}
	}
}

// streamChunk is one "chat.completion.chunk" object; Error and Object catch an
// error sent in place of a chunk.
type streamChunk struct {
	Model   string         `json:"model"`
	Choices []streamChoice `json:"choices"`
	Usage   *wireUsage     `json:"usage"`
	errorEnvelope
}

type streamChoice struct {
	Index        int         `json:"index"`
	Delta        streamDelta `json:"delta"`
	FinishReason string      `json:"finish_reason"`
}

type streamDelta struct {
	Content          string         `json:"content"`
	Refusal          string         `json:"refusal"`
	ReasoningContent string         `json:"reasoning_content"`
	Reasoning        string         `json:"reasoning"`
	ToolCalls        []wireToolCall `json:"tool_calls"`
}

type wireToolCall struct {
	Index    int    `json:"index"`
	ID       string `json:"id"`
	Function struct {
		Name      string  `json:"name"`
		Arguments argText `json:"arguments"`
	} `json:"function"`
}

// argText is tool-call arguments: a JSON string on OpenAI, but some compatible
// servers send the object itself, which is kept as its JSON text.
type argText string

func (a *argText) UnmarshalJSON(data []byte) error {
	data = bytes.TrimSpace(data)
	switch {
	case len(data) > 0 && data[0] == '"':
		var s string
		if err := json.Unmarshal(data, &s); err != nil {
			return err
		}
		*a = argText(s)
	case string(data) == "null":
		*a = ""
	default:
		*a = argText(data)
	}
	return nil
}

type wireUsage struct {
	PromptTokens        int `json:"prompt_tokens"`
	CompletionTokens    int `json:"completion_tokens"`
	TotalTokens         int `json:"total_tokens"`
	PromptTokensDetails *struct {
		CachedTokens int `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
	CompletionTokensDetails *struct {
		ReasoningTokens int `json:"reasoning_tokens"`
	} `json:"completion_tokens_details"`
	// Cost is sent by OpenRouter (usage accounting).
	Cost float64 `json:"cost"`
}

func (u *wireUsage) usage() *model.Usage {
	out := &model.Usage{InputTokens: u.PromptTokens, OutputTokens: u.CompletionTokens, TotalTokens: u.TotalTokens, Cost: u.Cost}
	if d := u.PromptTokensDetails; d != nil {
		out.CacheReadTokens = d.CachedTokens
	}
	if d := u.CompletionTokensDetails; d != nil {
		out.ReasoningTokens = d.ReasoningTokens
	}
	return out
}

// decodeStream turns an SSE body into chunks. It ends with an error unless the
// body reaches "data: [DONE]" or, for servers that end their streams without
// it (Hugging Face TGI), a chunk gave a finish_reason before the body ended:
// a stream cut short has none. Nothing in the body can make it panic.
// secrets are the credentials sent, kept out of any quote of the body.
func (m *Model) decodeStream(body io.Reader, secrets ...string) iter.Seq2[*model.Chunk, error] {
	return func(yield func(*model.Chunk, error) bool) {
		var (
			calls     callIndexer
			sentModel string
			lastModel string
			produced  bool // content, reasoning or a tool call came
			finished  bool // a choice gave its finish_reason
		)
		done := func() {
			if lastModel != sentModel {
				yield(&model.Chunk{ModelID: lastModel}, nil)
			}
		}
		for ev, err := range sse.Read(body, 0) {
			if err != nil {
				yield(nil, fmt.Errorf("openai: reading stream: %w: %w", model.ErrMalformedResponse, err))
				return
			}
			data := bytes.TrimSpace(ev.Data)
			if len(data) == 0 {
				continue
			}
			if string(data) == "[DONE]" {
				done()
				return
			}
			var sc streamChunk
			if err := json.Unmarshal(data, &sc); err != nil {
				yield(nil, fmt.Errorf("openai: stream chunk %q is not a chat.completion.chunk: %w: %v",
					snippet(data, secrets), model.ErrMalformedResponse, err))
				return
			}
			if e := sc.err(); e != nil {
				yield(nil, m.streamError(e))
				return
			}
			if sc.Model != "" {
				lastModel = sc.Model
			}
			c := &model.Chunk{}
			for i := range sc.Choices {
				ch := &sc.Choices[i]
				if ch.Index != 0 {
					continue // only one choice is ever requested
				}
				c.Content += ch.Delta.Content + ch.Delta.Refusal
				// One of the two reasoning fields: a server sending both
				// (vLLM while renaming the field) sends the same text twice.
				if ch.Delta.ReasoningContent != "" {
					c.ReasoningContent += ch.Delta.ReasoningContent
				} else {
					c.ReasoningContent += ch.Delta.Reasoning
				}
				for _, tc := range ch.Delta.ToolCalls {
					c.ToolCalls = append(c.ToolCalls, calls.delta(tc.Index, tc.ID, tc.Function.Name, string(tc.Function.Arguments)))
				}
				if ch.FinishReason != "" {
					c.StopReason, finished = ch.FinishReason, true
				}
			}
			produced = produced || c.Content != "" || c.ReasoningContent != "" || len(c.ToolCalls) > 0
			if c.StopReason == "content_filter" && !produced {
				yield(nil, m.filtered())
				return
			}
			if sc.Usage != nil {
				c.Usage = sc.Usage.usage()
			}
			if c.Content == "" && c.ReasoningContent == "" && len(c.ToolCalls) == 0 && c.Usage == nil && c.StopReason == "" {
				continue
			}
			if lastModel != sentModel {
				c.ModelID, sentModel = lastModel, lastModel
			}
			if !yield(c, nil) {
				return
			}
		}
		if finished {
			done()
			return
		}
		yield(nil, fmt.Errorf("openai: stream ended before a finish_reason or \"data: [DONE]\" (truncated): %w", model.ErrMalformedResponse))
	}
}

// snippet is the start of an answer that could not be decoded, for an error
// message, with the credentials sent blanked out (a gateway's page may echo
// the request's headers).
func snippet(b []byte, secrets []string) string {
	return clip.Mark(string(model.RedactSecrets(b, secrets...)), 120, "…")
}

// callIndexer gives each streamed tool call a stable index of its own. OpenAI
// numbers parallel calls 0, 1, …; some compatible servers reuse index 0 for
// every call or repeat the name in every fragment, which would otherwise merge
// distinct calls in model.Accumulator.
type callIndexer struct {
	calls  []*indexedCall // pointers: a strings.Builder must not be copied
	byWire map[int]int    // wire index → latest call with it
}

type indexedCall struct {
	id     string
	realID bool
	name   strings.Builder
}

func (x *callIndexer) delta(wire int, id, name, args string) model.ToolCallDelta {
	cur, ok := x.byWire[wire]
	if !ok || (id != "" && x.calls[cur].realID && x.calls[cur].id != id) {
		cur = len(x.calls)
		x.calls = append(x.calls, &indexedCall{id: id, realID: id != ""})
		if id == "" {
			// Tool results are matched to calls by id, so a call must have one.
			x.calls[cur].id = "call_" + strconv.Itoa(cur)
			id = x.calls[cur].id
		}
		if x.byWire == nil {
			x.byWire = make(map[int]int)
		}
		x.byWire[wire] = cur
	} else if id != "" {
		c := x.calls[cur]
		if c.id == id {
			id = "" // already sent
		} else {
			c.id, c.realID = id, true
		}
	}
	c := x.calls[cur]
	if name != "" {
		if name == c.name.String() {
			name = "" // a server repeating the whole name in each fragment
		} else {
			c.name.WriteString(name)
		}
	}
	return model.ToolCallDelta{Index: cur, ID: id, Name: name, Arguments: args}
}

// responseChunk carries a whole response as one chunk.
func responseChunk(r *model.Response) *model.Chunk {
	c := &model.Chunk{
		Content:          r.Message.Content,
		ReasoningContent: r.Message.ReasoningContent,
		StopReason:       r.StopReason,
		ModelID:          r.ModelID,
	}
	for i, tc := range r.Message.ToolCalls {
		c.ToolCalls = append(c.ToolCalls, model.ToolCallDelta{Index: i, ID: tc.ID, Name: tc.Name, Arguments: tc.Arguments})
	}
	if r.Usage != (model.Usage{}) {
		u := r.Usage
		c.Usage = &u
	}
	return c
}

// ReadsHistory reports that the model reads a request's History
// (model.HistoryReader): the agent shares its history without a copy.
func (m *Model) ReadsHistory() bool { return true }
