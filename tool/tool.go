package tool

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/agentryhq/agentry/model"
)

// Sentinel errors of tool execution. Execution errors are returned to the model as
// tool messages; they never end a run by themselves.
var (
	ErrUnknownTool      = errors.New("tool: unknown tool")
	ErrInvalidArguments = errors.New("tool: invalid arguments")
	ErrTimeout          = errors.New("tool: timed out")
)

// Definition describes a tool: what the model sees (Name, Description,
// Parameters) and how the agent must treat calls to it.
type Definition struct {
	Name        string
	Description string
	// Parameters is a JSON Schema object for the arguments.
	Parameters json.RawMessage
	// Strict asks providers that support it to enforce the schema.
	Strict bool
	// Timeout bounds one call; zero means no per-tool limit. A tool without
	// a timeout runs on the caller's goroutine: cancellation reaches it
	// through its context and the caller waits for it to return. A tool with
	// a timeout runs on a worker goroutine and is not waited for past its
	// timeout or a cancellation, even when it ignores its context: give one a
	// timeout when it might block without watching its context.
	Timeout time.Duration
	// Human-in-the-loop flags. A call to a tool with any of them set pauses the run
	// until the caller confirms, supplies input or executes it.
	RequiresConfirmation bool
	RequiresUserInput    bool
	ExternalExecution    bool
	// StopAfterCall ends the run after this tool's result.
	StopAfterCall bool
	// NonIdempotent says a call must not simply run again when a durable
	// run resumes after a crash that interrupted it (its side effect may
	// have happened): the run pauses with a confirmation requirement for
	// that call instead. Idempotent tools are re-run with the same
	// run.IdempotencyKey(ctx).
	NonIdempotent bool
	// HonorsCancel says the tool returns promptly once its context ends and
	// must be waited for even then (a team's delegation tools: the member
	// runs they start are stored, CANCELLED, before the team run is): an
	// agent run that is cancelled waits for it, also when it runs
	// concurrently with other calls or while events are streamed.
	HonorsCancel bool
}

// Spec returns what is sent to the model.
func (d Definition) Spec() model.ToolSpec {
	return model.ToolSpec{Name: d.Name, Description: d.Description, Parameters: d.Parameters, Strict: d.Strict}
}

// Tool is something a model can call. Call receives the raw JSON arguments the
// model produced and returns the text given back to the model. Implementations
// must be safe for concurrent use: calls from one model turn run in parallel.
type Tool interface {
	Definition() Definition
	Call(ctx context.Context, args json.RawMessage) (string, error)
}
