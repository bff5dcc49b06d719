package gemini

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"iter"
	"strconv"

	"github.com/agentryhq/agentry/internal/clip"
	"github.com/agentryhq/agentry/internal/sse"
	"github.com/agentryhq/agentry/model"
)

// wireResponse is a GenerateContentResponse: the whole answer, or one piece
// of a stream.
type wireResponse struct {
	Candidates     []candidate `json:"candidates"`
	PromptFeedback *struct {
		BlockReason string `json:"blockReason"`
	} `json:"promptFeedback"`
	UsageMetadata *usageMetadata `json:"usageMetadata"`
	ModelVersion  string         `json:"modelVersion"`
	ResponseID    string         `json:"responseId"`
	Error         *wireError     `json:"error"`
}

type candidate struct {
	Content       *content `json:"content"`
	FinishReason  string   `json:"finishReason"`
	FinishMessage string   `json:"finishMessage"`
	Index         int      `json:"index"`
}

type usageMetadata struct {
	PromptTokenCount        int `json:"promptTokenCount"`
	CandidatesTokenCount    int `json:"candidatesTokenCount"`
	CachedContentTokenCount int `json:"cachedContentTokenCount"`
	ThoughtsTokenCount      int `json:"thoughtsTokenCount"`
}

// usage follows Agno 3.0's Gemini metrics, so that a run's metrics read the
// same whichever of the two wrote it (and agno_metrics sums alike): input is
// the whole prompt (cached part included), output the candidates without
// thoughts, which count as reasoning, and total is input + output.
// Google's totalTokenCount is not used: it also counts thoughts and
// tool-use prompt tokens, which Agno leaves out of total_tokens (thoughts
// stay visible as reasoning_tokens).
func (u *usageMetadata) usage() *model.Usage {
	return &model.Usage{
		InputTokens: u.PromptTokenCount, OutputTokens: u.CandidatesTokenCount,
		TotalTokens:     u.PromptTokenCount + u.CandidatesTokenCount,
		CacheReadTokens: u.CachedContentTokenCount, ReasoningTokens: u.ThoughtsTokenCount,
	}
}

// blockReasons are the finishReasons of an answer Gemini stopped for its
// policies; with nothing produced before, the answer is an error, as a
// blocked prompt is, not an empty answer.
var blockReasons = map[string]bool{
	"SAFETY": true, "RECITATION": true, "BLOCKLIST": true, "PROHIBITED_CONTENT": true, "SPII": true,
	"IMAGE_SAFETY": true, "IMAGE_PROHIBITED_CONTENT": true, "IMAGE_RECITATION": true,
}

// malformedCall is the error of an answer that ended in a function call
// Gemini could not parse (finishReason MALFORMED_FUNCTION_CALL: code
// instead of a call, a call that is not JSON) before any content. Nothing
// reads a stop reason, and the empty answer would complete the run with no
// content and no reason; the generation failed on the provider's side and
// another try may well succeed, so it is a retryable ErrServer. finishMessage
// (Gemini quotes the malformed call) is kept, cut to a readable length.
func malformedCall(finishMessage string) error {
	msg := "the answer ended in a malformed function call (finishReason MALFORMED_FUNCTION_CALL) before any content; retrying may help"
	if finishMessage != "" {
		msg += ": " + clip.Mark(finishMessage, 512, "…")
	}
	return &model.ProviderError{Provider: providerName, Kind: model.ErrServer, Message: msg}
}

// decoder turns responses into chunks, numbering function calls across a
// stream.
type decoder struct {
	calls int
	// responseID names the answer in the ids of its calls: Gemini's
	// responseId, or a random one when no chunk carries it.
	responseID string
	finished   bool
	usage      *model.Usage
	modelID    string
	// produced: some content, reasoning or call came before the finish.
	produced bool
}

func (d *decoder) chunk(r *wireResponse) (*model.Chunk, error) {
	if r.Error != nil {
		return nil, streamError(r.Error)
	}
	c := &model.Chunk{}
	if r.ModelVersion != "" && r.ModelVersion != d.modelID {
		d.modelID = r.ModelVersion
		c.ModelID = r.ModelVersion
	}
	if r.UsageMetadata != nil {
		d.usage = r.UsageMetadata.usage()
	}
	if len(r.Candidates) == 0 {
		if d.finished && r.UsageMetadata != nil {
			c.Usage = d.usage
		}
		if r.PromptFeedback != nil && r.PromptFeedback.BlockReason != "" {
			return nil, &model.ProviderError{Provider: providerName, Kind: model.ErrBadRequest,
				Message: "the prompt was blocked: " + r.PromptFeedback.BlockReason}
		}
		return c, nil
	}
	cand := &r.Candidates[0]
	if cand.Content != nil {
		for _, p := range cand.Content.Parts {
			switch {
			case p.FunctionCall != nil:
				id := p.FunctionCall.ID
				if id == "" {
					id = syntheticIDPrefix + d.idFor(r) + "_" + strconv.Itoa(d.calls)
				}
				args := "{}"
				if len(bytes.TrimSpace(p.FunctionCall.Args)) > 0 && string(p.FunctionCall.Args) != "null" {
					args = compact(p.FunctionCall.Args)
				}
				c.ToolCalls = append(c.ToolCalls, model.ToolCallDelta{
					Index: d.calls, ID: id, Name: p.FunctionCall.Name, Arguments: args, ThoughtSignature: p.ThoughtSignature,
				})
				d.calls++
			case p.Thought:
				c.ReasoningContent += p.Text
			default:
				c.Content += p.Text
				if p.ThoughtSignature != "" {
					c.ProviderData = map[string]any{"thought_signature": p.ThoughtSignature}
				}
			}
		}
	}
	d.produced = d.produced || c.Content != "" || c.ReasoningContent != "" || len(c.ToolCalls) > 0
	if cand.FinishReason != "" {
		d.finished = true
		c.StopReason = cand.FinishReason
		if blockReasons[cand.FinishReason] && !d.produced {
			return nil, model.Blocked(providerName, "blocked (finishReason "+cand.FinishReason+")", "rephrase the prompt, or set safetySettings through extra_body")
		}
		if cand.FinishReason == "MALFORMED_FUNCTION_CALL" && !d.produced {
			return nil, malformedCall(cand.FinishMessage)
		}
	}
	if d.finished && (cand.FinishReason != "" || r.UsageMetadata != nil) {
		c.Usage = d.usage
	}
	return c, nil
}

// idFor is the response id of r's stream: the first responseId seen, else
// a random one, so that calls of two answers never share an id.
func (d *decoder) idFor(r *wireResponse) string {
	if d.responseID == "" {
		d.responseID = r.ResponseID
	}
	if d.responseID == "" {
		d.responseID = "r" + rand.Text()[:12]
	}
	return d.responseID
}

func (d *decoder) empty(ch *model.Chunk) bool {
	return ch.Content == "" && ch.ReasoningContent == "" && len(ch.ToolCalls) == 0 && ch.StopReason == "" &&
		ch.Usage == nil && ch.ModelID == "" && ch.ProviderData == nil
}

func decodeResponse(data []byte) (*model.Response, error) {
	var r wireResponse
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("gemini: response %q is not a GenerateContentResponse: %w: %v", snippet(data), model.ErrMalformedResponse, err)
	}
	var d decoder
	c, err := d.chunk(&r)
	if err != nil {
		return nil, err
	}
	if len(r.Candidates) == 0 {
		return nil, fmt.Errorf("gemini: response has no candidates: %w", model.ErrMalformedResponse)
	}
	if c.Usage == nil {
		c.Usage = d.usage
	}
	var acc model.Accumulator
	acc.Add(c)
	return acc.Response(), nil
}

// decodeStream reads streamGenerateContent's SSE. Gemini sends no end marker:
// a stream is complete once a candidate carried a finishReason, and one that
// ends before that is truncated.
func decodeStream(body io.Reader) iter.Seq2[*model.Chunk, error] {
	return func(yield func(*model.Chunk, error) bool) {
		var d decoder
		// An image-output model streams an image inline in one chunk: a
		// line may be as large as a whole non-streamed answer.
		for ev, err := range sse.Read(body, model.MaxResponseBody) {
			if err != nil {
				yield(nil, fmt.Errorf("gemini: reading stream: %w: %w", model.ErrMalformedResponse, err))
				return
			}
			data := bytes.TrimSpace(ev.Data)
			if len(data) == 0 {
				continue
			}
			var r wireResponse
			if err := json.Unmarshal(data, &r); err != nil {
				yield(nil, fmt.Errorf("gemini: stream event %q is not a GenerateContentResponse: %w: %v", snippet(data), model.ErrMalformedResponse, err))
				return
			}
			c, err := d.chunk(&r)
			if err != nil {
				yield(nil, err)
				return
			}
			if d.empty(c) {
				continue
			}
			if !yield(c, nil) {
				return
			}
		}
		if !d.finished {
			yield(nil, fmt.Errorf("gemini: stream ended before a finishReason (truncated): %w", model.ErrMalformedResponse))
		}
	}
}

func snippet(b []byte) string {
	const n = 120
	if len(b) > n {
		return string(b[:n]) + "…"
	}
	return string(b)
}
