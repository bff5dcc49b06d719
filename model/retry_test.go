package model

import (
	"context"
	"errors"
	"iter"
	"sync/atomic"
	"testing"
	"time"
)

// flaky fails its first `fails` calls with err, optionally after one chunk.
type flaky struct {
	calls      atomic.Int32
	fails      int32
	err        error
	chunkFirst bool
}

func (f *flaky) Info() Info { return Info{ID: "flaky"} }

func (f *flaky) Invoke(ctx context.Context, req *Request) (*Response, error) {
	if f.calls.Add(1) <= f.fails {
		return nil, f.err
	}
	return &Response{Message: Message{Role: RoleAssistant, Content: "ok"}}, nil
}

func (f *flaky) Stream(ctx context.Context, req *Request) iter.Seq2[*Chunk, error] {
	return func(yield func(*Chunk, error) bool) {
		n := f.calls.Add(1)
		if n <= f.fails {
			if f.chunkFirst && !yield(&Chunk{Content: "partial "}, nil) {
				return
			}
			yield(nil, f.err)
			return
		}
		yield(&Chunk{Content: "ok"}, nil)
	}
}

func fastRetry() RetryConfig {
	return RetryConfig{MaxAttempts: 3, BaseDelay: time.Microsecond, MaxDelay: time.Millisecond}
}

func TestWithRetry_RetriesRetryableErrors(t *testing.T) {
	t.Parallel()
	f := &flaky{fails: 2, err: &ProviderError{Kind: ErrRateLimit, RetryAfter: time.Microsecond}}
	resp, err := WithRetry(f, fastRetry()).Invoke(context.Background(), &Request{})
	if err != nil || resp.Message.Content != "ok" || f.calls.Load() != 3 {
		t.Fatalf("resp %v err %v calls %d", resp, err, f.calls.Load())
	}
}

func TestWithRetry_StopsOnPermanentErrorsAndAfterMaxAttempts(t *testing.T) {
	t.Parallel()
	auth := &flaky{fails: 5, err: &ProviderError{Kind: ErrAuth}}
	if _, err := WithRetry(auth, fastRetry()).Invoke(context.Background(), &Request{}); !errors.Is(err, ErrAuth) || auth.calls.Load() != 1 {
		t.Fatalf("auth: err %v calls %d", err, auth.calls.Load())
	}
	server := &flaky{fails: 5, err: &ProviderError{Kind: ErrServer}}
	if _, err := WithRetry(server, fastRetry()).Invoke(context.Background(), &Request{}); !errors.Is(err, ErrServer) || server.calls.Load() != 3 {
		t.Fatalf("server: err %v calls %d", err, server.calls.Load())
	}
}

func TestWithRetry_StreamRetriesOnlyBeforeFirstChunk(t *testing.T) {
	t.Parallel()
	collect := func(m Model) (string, error) {
		var acc Accumulator
		for c, err := range m.Stream(context.Background(), &Request{}) {
			if err != nil {
				return acc.Response().Message.Content, err
			}
			acc.Add(c)
		}
		return acc.Response().Message.Content, nil
	}
	early := &flaky{fails: 1, err: &ProviderError{Kind: ErrServer}}
	if got, err := collect(WithRetry(early, fastRetry())); err != nil || got != "ok" {
		t.Fatalf("early failure: %q %v", got, err)
	}
	late := &flaky{fails: 1, err: &ProviderError{Kind: ErrServer}, chunkFirst: true}
	if got, err := collect(WithRetry(late, fastRetry())); !errors.Is(err, ErrServer) || got != "partial " || late.calls.Load() != 1 {
		t.Fatalf("failure after a chunk must not be retried (it would duplicate output): %q %v calls %d", got, err, late.calls.Load())
	}
}

func TestWithRetry_CancelledWhileWaiting(t *testing.T) {
	t.Parallel()
	f := &flaky{fails: 5, err: &ProviderError{Kind: ErrRateLimit, RetryAfter: time.Hour}}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := WithRetry(f, RetryConfig{MaxDelay: time.Hour}).Invoke(ctx, &Request{})
	if !errors.Is(err, context.Canceled) || !errors.Is(err, ErrRateLimit) {
		t.Fatalf("err = %v, want both the cause and the cancellation", err)
	}
}

func TestAccumulator_AssemblesToolCallFragments(t *testing.T) {
	t.Parallel()
	var a Accumulator
	for _, c := range []*Chunk{
		{Content: "Let me "},
		{ToolCalls: []ToolCallDelta{{Index: 1, ID: "b", Name: "second", Arguments: `{"x"`}}},
		{ToolCalls: []ToolCallDelta{{Index: 0, ID: "a", Name: "first", Arguments: `{}`}}},
		{Content: "check.", ToolCalls: []ToolCallDelta{{Index: 1, Arguments: `:1}`}}},
		{ReasoningContent: "hmm", Thinking: &ThinkingBlock{Type: "thinking", Thinking: "hmm", Signature: "sig"}},
		{Usage: &Usage{InputTokens: 3, OutputTokens: 4}, StopReason: "tool_calls", ModelID: "m"},
		nil,
	} {
		a.Add(c)
	}
	r := a.Response()
	m := r.Message
	if m.Content != "Let me check." || m.ReasoningContent != "hmm" || len(m.Thinking) != 1 {
		t.Fatalf("message %+v", m)
	}
	if len(m.ToolCalls) != 2 || m.ToolCalls[0] != (ToolCall{ID: "a", Name: "first", Arguments: "{}"}) ||
		m.ToolCalls[1] != (ToolCall{ID: "b", Name: "second", Arguments: `{"x":1}`}) {
		t.Fatalf("tool calls %+v", m.ToolCalls)
	}
	if r.Usage.TotalTokens != 7 || r.StopReason != "tool_calls" || r.ModelID != "m" {
		t.Fatalf("response %+v", r)
	}
}
