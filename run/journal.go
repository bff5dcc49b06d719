package run

import (
	"context"
	"encoding/json"
	"errors"
)

// ErrFenced is returned by a Journal when a step is recorded by an attempt
// older than the newest attempt of its run: a superseded worker must stop
// and must not overwrite what the newer attempt recorded.
var ErrFenced = errors.New("run: journal write from a superseded attempt")

// ErrStepInterrupted is returned by Journal.Do for a non-idempotent step that
// an earlier attempt started and never recorded a result for: repeating it
// could repeat a side effect, so the run pauses for a human decision instead.
var ErrStepInterrupted = errors.New("run: a non-idempotent step was interrupted before its result was recorded")

// JournalStep names one step of a durable run: a model call or a tool call.
type JournalStep struct {
	RunID string
	// Key is unique within the run and the same when the run is replayed:
	// "model:N" for the run's N-th model call (1-based), "tool:CALL_ID" for
	// a tool call.
	Key string
	// Kind is "model" or "tool".
	Kind string
	// Attempt is the run's execution attempt (the job's fencing token).
	Attempt int
	// Idempotent reports that the step may be executed again when an
	// earlier attempt started it without recording a result (model calls
	// are; tools say so in their definition).
	Idempotent bool
	// Request is what the step was asked (for inspection; not compared).
	Request json.RawMessage
}

// Journal records the steps of a durable (background) run so that a run
// resumed after a crash replays what completed instead of calling the model
// or the tool again.
type Journal interface {
	// Do returns the recorded result of step s when there is one, without
	// calling fn. Otherwise it records that s started, calls fn and records
	// its result. fn's error is returned and not recorded as a result.
	Do(ctx context.Context, s JournalStep, fn func(context.Context) (json.RawMessage, error)) (json.RawMessage, error)
}

type idempotencyKey struct{}

// IdempotencyKeyContextKey is the context key IdempotencyKey looks up, for a
// context type that answers it itself: its value is the key as a string, or
// an IdempotencyKeyer that derives it when asked (an agent's tool call
// context, so that a tool that never asks costs no string).
var IdempotencyKeyContextKey any = idempotencyKey{}

// IdempotencyKeyer derives a step's idempotency key on demand.
type IdempotencyKeyer interface {
	IdempotencyKey() string
}

// WithIdempotencyKey returns ctx carrying the idempotency key of the step a
// tool executes in. A tool call re-executed after a crash gets the same key.
func WithIdempotencyKey(ctx context.Context, key string) context.Context {
	return context.WithValue(ctx, idempotencyKey{}, key)
}

// IdempotencyKey returns the key WithIdempotencyKey stored in ctx, or "".
func IdempotencyKey(ctx context.Context) string {
	switch k := ctx.Value(idempotencyKey{}).(type) {
	case string:
		return k
	case IdempotencyKeyer:
		return k.IdempotencyKey()
	}
	return ""
}

// Fencer is the optional ability of a Journal to check that an attempt is
// still the newest of its run: the agent calls it when the run starts
// (claiming it) and, unless the journal can check inside the save's own
// transaction (db.TxFencer), right before it saves the run's final row; a
// superseded attempt (run.ErrFenced) saves nothing.
type Fencer interface {
	Fence(ctx context.Context, runID string, attempt int) error
}

// LazyJournal is the optional ability of a Journal to run an idempotent
// step now and record its result only when the caller asks (record). A run
// uses it for a model call: when the answer is the run's last step (no tool
// calls, no further model call), the run's final save is its record and the
// step is never written; otherwise the run records it before anything else
// happens (before a tool runs, before the next model call), so a replay sees
// exactly what the run went on from. record is nil for a replayed step.
type LazyJournal interface {
	DoLazy(ctx context.Context, s JournalStep, fn func(context.Context) (json.RawMessage, error)) (res json.RawMessage, record func(context.Context) error, err error)
}
