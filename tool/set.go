package tool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/agentryhq/agentry/model"
)

// ErrPanicked marks a tool call that panicked; the panic is recovered and
// reported to the model like any other tool error.
var ErrPanicked = errors.New("tool: panicked")

// PanicError carries a recovered panic. It unwraps to ErrPanicked.
type PanicError struct {
	Tool  string
	Value any
	// Stack is the goroutine stack at the panic, for logs (never sent to the model).
	Stack []byte
}

func (e *PanicError) Error() string {
	return fmt.Sprintf("tool %s panicked: %v", e.Tool, e.Value)
}

func (e *PanicError) Unwrap() error { return ErrPanicked }

// Result is the outcome of one tool call. A failed call is still a result: its
// Content is the error text the model sees, so it can correct itself.
type Result struct {
	Call model.ToolCall
	// Content is the tool's output, or the error message when Err is set.
	Content string
	// Err is nil on success; it wraps ErrUnknownTool, ErrInvalidArguments,
	// ErrTimeout, ErrPanicked, a context error or the tool's own error.
	Err      error
	Duration time.Duration
}

// IsError reports whether the call failed (tool_call_error in Agno).
func (r Result) IsError() bool { return r.Err != nil }

// Message is the tool-result message to append to the conversation.
func (r Result) Message() model.Message {
	m := model.Message{
		Role:          model.RoleTool,
		Content:       r.Content,
		ToolCallID:    r.Call.ID,
		ToolName:      r.Call.Name,
		ToolCallError: r.Err != nil,
	}
	if args := strings.TrimSpace(r.Call.Arguments); args != "" && json.Valid([]byte(args)) {
		m.ToolArgs = json.RawMessage(args)
	}
	return m
}

// Set is an immutable registry of tools with unique names. It is safe for
// concurrent use; With returns a new Set instead of changing this one.
type Set struct {
	tools  []Tool
	checks []*validator
	index  map[string]int
}

// argValidating is implemented by tools that validate their own arguments with
// a schema compiled once (Func tools), so a Set need not compile it again.
type argValidating interface {
	argValidator() *validator
}

// preValidated is implemented by tools that can skip validation when the Set
// already did it.
type preValidated interface {
	call(ctx context.Context, args json.RawMessage) (string, error)
}

// NewSet builds a registry from tools and the selected tools of toolkits. It
// fails on nil tools, empty or duplicate names and parameter schemas that do
// not compile.
func NewSet(tools []Tool, kits ...Toolkit) (*Set, error) {
	s := &Set{index: make(map[string]int, len(tools))}
	return s.add(tools, kits)
}

// With returns a new Set holding this Set's tools followed by more.
func (s *Set) With(tools []Tool, kits ...Toolkit) (*Set, error) {
	n := &Set{
		tools:  append([]Tool(nil), s.tools...),
		checks: append([]*validator(nil), s.checks...),
		index:  make(map[string]int, len(s.tools)+len(tools)),
	}
	for k, v := range s.index {
		n.index[k] = v
	}
	return n.add(tools, kits)
}

func (s *Set) add(tools []Tool, kits []Toolkit) (*Set, error) {
	all := tools
	for _, k := range kits {
		sel, err := k.Selected()
		if err != nil {
			return nil, err
		}
		all = append(all[:len(all):len(all)], sel...)
	}
	for i, t := range all {
		if t == nil {
			return nil, fmt.Errorf("tool: nil tool at position %d", i)
		}
		def := t.Definition()
		if def.Name == "" {
			return nil, fmt.Errorf("tool: tool at position %d has no name", i)
		}
		if _, dup := s.index[def.Name]; dup {
			return nil, fmt.Errorf("tool: duplicate tool name %q: names must be unique within an agent", def.Name)
		}
		var v *validator
		if av, ok := t.(argValidating); ok {
			v = av.argValidator()
		} else {
			var err error
			if v, err = newValidator(def.Name, def.Parameters); err != nil {
				return nil, err
			}
		}
		s.index[def.Name] = len(s.tools)
		s.tools = append(s.tools, t)
		s.checks = append(s.checks, v)
	}
	return s, nil
}

// Len is the number of tools.
func (s *Set) Len() int { return len(s.tools) }

// Tools returns the tools in registration order.
func (s *Set) Tools() []Tool { return append([]Tool(nil), s.tools...) }

// Names returns the tool names in registration order.
func (s *Set) Names() []string {
	names := make([]string, len(s.tools))
	for i, t := range s.tools {
		names[i] = t.Definition().Name
	}
	return names
}

// Lookup returns the tool with this name.
func (s *Set) Lookup(name string) (Tool, bool) {
	i, ok := s.index[name]
	if !ok {
		return nil, false
	}
	return s.tools[i], true
}

// Specs returns what is sent to the model, in registration order.
func (s *Set) Specs() []model.ToolSpec {
	specs := make([]model.ToolSpec, len(s.tools))
	for i, t := range s.tools {
		specs[i] = t.Definition().Spec()
	}
	return specs
}

// Execute runs one tool call: lookup, argument validation, the call under the
// tool's timeout, panic recovery. It never panics and never returns a Go error:
// failures are in the Result, to be sent back to the model.
// Human-in-the-loop flags are not handled here; the caller pauses before
// executing such a tool.
func (s *Set) Execute(ctx context.Context, call model.ToolCall) Result {
	start := time.Now()
	content, err := s.execute(ctx, call)
	if err != nil {
		content = err.Error()
	}
	return Result{Call: call, Content: content, Err: err, Duration: time.Since(start)}
}

func (s *Set) execute(ctx context.Context, call model.ToolCall) (string, error) {
	i, ok := s.index[call.Name]
	if !ok {
		return "", fmt.Errorf("%w %q; available tools: %s", ErrUnknownTool, call.Name, strings.Join(s.Names(), ", "))
	}
	t := s.tools[i]
	if dt, ok := t.(directTool); ok && dt.usesValidator(s.checks[i]) {
		return dt.execute(ctx, call.Arguments)
	}
	args, err := s.checks[i].check(json.RawMessage(call.Arguments))
	if err != nil {
		return "", err
	}
	if err := ctx.Err(); err != nil {
		return "", fmt.Errorf("tool %s not run: %w", call.Name, context.Cause(ctx))
	}
	return invoke(ctx, t.Definition(), func(ctx context.Context) (string, error) {
		if pv, ok := t.(preValidated); ok {
			return pv.call(ctx, args)
		}
		return t.Call(ctx, args)
	})
}

// directTool is a tool that validates, decodes and runs a call from the
// model's argument text itself (Func tools): on the caller's goroutine, whose
// stack is already grown, and reading the text in place.
type directTool interface {
	// usesValidator reports whether the tool validates with v, the Set's.
	usesValidator(v *validator) bool
	execute(ctx context.Context, args string) (string, error)
}

// errTimeoutCause tells a tool's own timeout apart from the caller's deadline.
var errTimeoutCause = errors.New("tool timeout")

// invoke calls the tool with panic recovery. A tool without a timeout runs on
// the caller's goroutine: cancellation reaches it through its context, and the
// caller waits for it to return. A tool with a timeout runs on a warm worker
// goroutine, so that it cannot hold the caller past its timeout or a
// cancellation even when it ignores its context; such a call finishes on its
// own.
func invoke(ctx context.Context, def Definition, fn func(context.Context) (string, error)) (string, error) {
	name, timeout := def.Name, def.Timeout
	if timeout <= 0 {
		return callInline(ctx, name, fn)
	}
	ctx, cancel := context.WithTimeoutCause(ctx, timeout, errTimeoutCause)
	defer cancel()
	timedOut := func() error {
		return fmt.Errorf("%w: %s did not finish within %s; try again with a smaller request or another approach", ErrTimeout, name, timeout)
	}
	done := outcomes.Get().(chan outcome)
	goWarm(func() {
		c, err := safeCall(ctx, name, fn)
		done <- outcome{c, err}
	})
	select {
	case o := <-done:
		// Received: the worker is done with the channel, so it can be reused.
		// On the other branch the worker may still send, so it is dropped.
		outcomes.Put(done)
		if o.err != nil && errors.Is(context.Cause(ctx), errTimeoutCause) && errors.Is(o.err, context.DeadlineExceeded) {
			return "", timedOut()
		}
		return o.content, o.err
	case <-ctx.Done():
		if errors.Is(context.Cause(ctx), errTimeoutCause) {
			return "", timedOut()
		}
		return "", fmt.Errorf("tool %s interrupted: %w", name, context.Cause(ctx))
	}
}

// callInline runs fn on the caller's goroutine with panic recovery; a
// failure after the context ended reads as an interruption.
func callInline(ctx context.Context, name string, fn func(context.Context) (string, error)) (string, error) {
	c, err := safeCall(ctx, name, fn)
	if err != nil && ctx.Err() != nil {
		return "", fmt.Errorf("tool %s interrupted: %w", name, context.Cause(ctx))
	}
	return c, err
}

// outcome is what a worker hands back for one call.
type outcome struct {
	content string
	err     error
}

// outcomes recycles the one-slot channels workers answer on.
var outcomes = sync.Pool{New: func() any { return make(chan outcome, 1) }}

func safeCall(ctx context.Context, name string, fn func(context.Context) (string, error)) (content string, err error) {
	defer func() {
		if r := recover(); r != nil {
			content, err = "", &PanicError{Tool: name, Value: r, Stack: debug.Stack()}
		}
	}()
	return fn(ctx)
}

// workerIdle is how long a tool worker goroutine waits for the next call
// before it exits.
const workerIdle = 10 * time.Second

// toolJobs hands a call to a worker goroutine that is idle and waiting.
var toolJobs = make(chan func())

// goWarm runs f on an idle worker, whose stack has already grown on earlier
// calls, or on a new worker that stays for later calls until it has been
// idle for workerIdle.
func goWarm(f func()) {
	select {
	case toolJobs <- f:
	default:
		go worker(f)
	}
}

func worker(f func()) {
	idle := time.NewTimer(workerIdle)
	defer idle.Stop()
	for {
		f()
		idle.Reset(workerIdle)
		select {
		case f = <-toolJobs:
		case <-idle.C:
			return
		}
	}
}
