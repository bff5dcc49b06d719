package codemode

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	oteltrace "go.opentelemetry.io/otel/trace"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/internal/otelspan"
	"github.com/agentryhq/agentry/tool"
)

// Errors of execute and restart, returned to the model as tool errors.
var (
	// ErrBusy: the session's interpreter is running another cell.
	ErrBusy = errors.New("codemode: the code environment is still busy with the previous cell; wait and retry, or call restart to discard its state")
	// ErrForeignSession: the session's interpreter or saved state belongs to
	// another user.
	ErrForeignSession = errors.New("codemode: the code environment of this session belongs to another user, so its variables cannot be reached from this run; continue in a new session")
	// ErrNoSession: execute was called outside an agent run.
	ErrNoSession = errors.New("codemode: execute needs the run's session: call it as a tool of an agent run, or use CodeMode.Run")
	// ErrTooManyKernels: MaxKernels interpreters exist and all are busy.
	ErrTooManyKernels = errors.New("codemode: every code environment is busy; try again shortly")
	// ErrClosed: CodeMode was closed.
	ErrClosed = errors.New("codemode: closed")
)

// maxEvicted bounds the ids of evicted sessions remembered for a notice.
const maxEvicted = 1024

// CodeMode is a set of per-session interpreters and the tools that reach
// them. It is safe for concurrent use; one CodeMode serves every session of
// the agent (or team) it is given to.
type CodeMode struct {
	cfg     Config
	set     *tool.Set
	handles []handle
	lim     sandboxLimits
	watch   *memWatch
	tools   []tool.Tool

	mu      sync.Mutex
	kernels map[string]*kernel
	evicted map[string]time.Time
	closed  bool
}

// New validates cfg and returns CodeMode. It starts no interpreter: each
// session's is created by its first cell.
func New(cfg Config) (*CodeMode, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	set, err := tool.NewSet(cfg.Tools)
	if err != nil {
		return nil, fmt.Errorf("codemode: tools: %w", err)
	}
	cm := &CodeMode{cfg: cfg, set: set, lim: limitsFor(cfg.MemoryLimit), watch: newMemWatch(cfg.MemoryLimit),
		kernels: map[string]*kernel{}, evicted: map[string]time.Time{}}
	taken := map[string]bool{}
	for _, t := range cfg.Tools {
		d := t.Definition()
		h := handle{name: d.Name, def: d, refusal: refusalFor(&d), js: handleName(d.Name)}
		if taken[h.js] {
			h.js = ""
		}
		taken[h.js] = true
		cm.handles = append(cm.handles, h)
	}
	exec, err := tool.Func(tool.FuncConfig{Name: "execute", Description: cm.executeDescription()}, cm.executeTool)
	if err != nil {
		return nil, err
	}
	cm.tools = []tool.Tool{exec}
	if !cfg.NoRestart {
		restart, err := tool.Func(tool.FuncConfig{Name: "restart", Description: "Restart the code environment of this session: " +
			"every variable and function is discarded (and the saved state cleared). Use it when the environment is broken or stuck."},
			cm.restartTool)
		if err != nil {
			return nil, err
		}
		cm.tools = append(cm.tools, restart)
	}
	return cm, nil
}

// Tools returns the tools the model is given: execute and, unless
// Config.NoRestart, restart.
func (cm *CodeMode) Tools() []tool.Tool { return append([]tool.Tool(nil), cm.tools...) }

// Toolkit returns Tools as a toolkit named "code_mode" (Agno's name).
func (cm *CodeMode) Toolkit() tool.Toolkit { return tool.Toolkit{Name: "code_mode", Tools: cm.Tools()} }

type executeArgs struct {
	Code string `json:"code" jsonschema:"JavaScript to run as one cell in the session's persistent environment"`
}

func (cm *CodeMode) executeTool(ctx context.Context, in executeArgs) (string, error) {
	rc, ok := agent.FromContext(ctx)
	if !ok || rc.SessionID == "" {
		return "", ErrNoSession
	}
	cell, err := cm.Run(ctx, rc.SessionID, rc.UserID, in.Code)
	if err != nil {
		return "", err
	}
	return cell.JSON(), nil
}

func (cm *CodeMode) restartTool(ctx context.Context, _ struct{}) (string, error) {
	rc, ok := agent.FromContext(ctx)
	if !ok || rc.SessionID == "" {
		return "", ErrNoSession
	}
	if err := cm.Restart(ctx, rc.SessionID, rc.UserID); err != nil {
		return "", err
	}
	return "The code environment was restarted: every variable and function is gone.", nil
}

// Run executes code as the next cell of session's interpreter on behalf of
// user ("" for none), creating the interpreter (and restoring its saved
// state) first if needed. Errors are about the environment (busy, another
// user's session, storage); failures of the code are in the Cell.
func (cm *CodeMode) Run(ctx context.Context, session, user, code string) (cell Cell, err error) {
	ctx, span := otelspan.Start(ctx, "execute_code", "execute_code")
	if span != nil {
		defer func() { endCellSpan(span, session, cell, err) }()
	}
	k, err := cm.acquire(ctx, session, user)
	if err != nil {
		return Cell{}, err
	}
	defer cm.release(k)
	cell = k.run(ctx, user, code)
	if k.broken {
		cm.discard(k)
		return cell, nil
	}
	if cell.Status == StatusAborted {
		cm.rebuild(ctx, k, &cell)
		return cell, nil
	}
	if cm.cfg.Persist && cell.Status == StatusOK {
		cm.persist(ctx, k, user, &cell)
	}
	return cell, nil
}

// persist snapshots k after a successful cell.
func (cm *CodeMode) persist(ctx context.Context, k *kernel, user string, cell *Cell) {
	doc, notice, err := k.captureLimited(ctx, user)
	if err == nil {
		err = cm.saveSnapshot(ctx, k, doc)
	}
	if err != nil {
		cm.cfg.Logger.Warn("codemode: saving the session's state failed", "session", k.session, "err", err)
		notice = joinNotice(notice, "the session's state could not be saved: "+err.Error())
	}
	cell.Notice = joinNotice(cell.Notice, notice)
}

// rebuild gives k a new runtime after an aborted cell. An interrupted goja
// runtime can be left with frames of the aborted calls on its stack (and
// then never runs promise jobs again), so it is not reused: the variables
// are carried over to the new one the way a snapshot would carry them.
func (cm *CodeMode) rebuild(ctx context.Context, k *kernel, cell *Cell) {
	if !k.restored {
		// The state the kernel starts from was not applied yet (the run
		// was cancelled while restoring it): keep it for the next cell.
		if err := k.start(); err != nil {
			cm.discard(k)
		}
		return
	}
	doc, _, err := k.captureLimited(context.WithoutCancel(ctx), k.owner)
	if err != nil {
		doc = nil
	}
	if err := k.start(); err != nil {
		cm.discard(k)
		return
	}
	// The aborted runtime is garbage now, often a large heap of it (cells
	// are aborted for allocating). Collect it here, where no cell's budget is
	// charged: otherwise the next cell's allocations pay for the collection
	// in GC assists, on its CPU clock.
	runtime.GC()
	k.pending, k.pendingFrom, k.restored = doc, "carried over from before the abort (as JSON values, functions from their source)", false
	// Changes to JavaScript's own objects are not state a snapshot
	// carries (docs/adr/codemode-mutable-builtins.md): say they are gone.
	if doc != nil && len(doc.Vars) > 0 {
		cell.Error.Message += "; the environment was rebuilt and its variables carried over (changes to built-in objects such as Array.prototype were undone)"
	} else {
		cell.Error.Message += "; the environment was rebuilt (changes to built-in objects such as Array.prototype were undone)"
	}
}

// Restart discards session's interpreter and clears its saved state. A
// running cell is aborted.
func (cm *CodeMode) Restart(ctx context.Context, session, user string) error {
	cm.mu.Lock()
	if cm.closed {
		cm.mu.Unlock()
		return ErrClosed
	}
	k := cm.kernels[session]
	if k != nil && !mayUse(k.owner, user) {
		cm.mu.Unlock()
		return ErrForeignSession
	}
	if k != nil {
		delete(cm.kernels, session)
		k.gone = true
		if k.idle != nil {
			k.idle.Stop()
		}
	}
	cm.mu.Unlock()
	if k != nil {
		k.interruptRunning(ReasonRestart)
		k.stopSaving()
	}
	if cm.cfg.Persist {
		// The session's saved state must not come back, and its absence
		// must not fall back to the user's latest: store an empty state.
		if _, _, _, err := cm.loadSnapshot(ctx, session, user); err != nil {
			return err
		}
		doc := &snapshotDoc{Version: snapshotVersion, Owner: user, Session: session, Vars: []snapVar{}}
		fresh := &kernel{session: session, owner: user}
		if err := cm.saveSnapshot(ctx, fresh, doc); err != nil {
			return fmt.Errorf("codemode: clearing the saved state: %w", err)
		}
	}
	return nil
}

// mayUse reports whether user may use an interpreter or state owned by
// owner: only its owner. One made by a run without a user ("") is reached
// only by runs without a user; a run with a user never claims it, since
// nothing says the environment is theirs (a session first run by a Go
// program without a user id, or before user isolation was turned on, may be
// anybody's), and its variables would be theirs to read.
func mayUse(owner, user string) bool { return owner == user }

// acquire returns session's kernel, busy for the caller.
func (cm *CodeMode) acquire(ctx context.Context, session, user string) (*kernel, error) {
	for {
		cm.mu.Lock()
		if cm.closed {
			cm.mu.Unlock()
			return nil, ErrClosed
		}
		k := cm.kernels[session]
		if k != nil {
			if !mayUse(k.owner, user) {
				cm.mu.Unlock()
				return nil, ErrForeignSession
			}
			cm.mu.Unlock()
			if err := cm.wait(ctx, k); err != nil {
				return nil, err
			}
			cm.mu.Lock()
			if k.gone { // evicted or restarted while we waited
				cm.mu.Unlock()
				<-k.busy
				continue
			}
			cm.touch(k)
			cm.mu.Unlock()
			return k, nil
		}
		if err := cm.makeRoom(); err != nil {
			cm.mu.Unlock()
			return nil, err
		}
		k = newKernel(cm, session, user)
		k.busy <- struct{}{}
		cm.kernels[session] = k
		_, wasEvicted := cm.evicted[session]
		delete(cm.evicted, session)
		cm.touch(k)
		cm.mu.Unlock()
		if err := cm.setup(ctx, k, user, wasEvicted); err != nil {
			cm.mu.Lock()
			if cm.kernels[session] == k {
				delete(cm.kernels, session)
			}
			k.gone = true
			cm.mu.Unlock()
			<-k.busy
			return nil, err
		}
		return k, nil
	}
}

// setup builds a new kernel's runtime and loads the state it starts from.
func (cm *CodeMode) setup(ctx context.Context, k *kernel, user string, wasEvicted bool) error {
	doc, from, notice, err := cm.loadSnapshot(ctx, k.session, user)
	if err != nil {
		return err
	}
	if err := k.start(); err != nil {
		return err
	}
	k.pending, k.pendingFrom, k.notice = doc, from, notice
	if doc == nil && notice == "" && wasEvicted {
		k.notice = "the code environment of this session was evicted (it was idle, or room was needed for others): variables from earlier cells are gone"
	}
	return nil
}

// wait takes k's busy slot according to the busy policy.
func (cm *CodeMode) wait(ctx context.Context, k *kernel) error {
	select {
	case k.busy <- struct{}{}:
		return nil
	default:
	}
	if cm.cfg.Busy == BusyRefuse {
		return ErrBusy
	}
	t := time.NewTimer(cm.cfg.BusyWait)
	defer t.Stop()
	select {
	case k.busy <- struct{}{}:
		return nil
	case <-t.C:
		return ErrBusy
	case <-ctx.Done():
		return ctx.Err()
	}
}

// release frees k's busy slot and arms its idle eviction.
func (cm *CodeMode) release(k *kernel) {
	cm.mu.Lock()
	cm.touch(k)
	if !k.gone {
		ttl := cm.cfg.IdleTTL
		if k.idle == nil {
			k.idle = time.AfterFunc(ttl, func() { cm.evictIdle(k) })
		} else {
			k.idle.Reset(ttl)
		}
	}
	cm.mu.Unlock()
	<-k.busy
}

func (cm *CodeMode) touch(k *kernel) { k.lastUsed = time.Now() }

// evictIdle drops k if it is still idle; its state was saved after its last
// successful cell.
func (cm *CodeMode) evictIdle(k *kernel) {
	cm.mu.Lock()
	defer cm.mu.Unlock()
	if k.gone || cm.kernels[k.session] != k || time.Since(k.lastUsed) < cm.cfg.IdleTTL {
		return
	}
	select {
	case k.busy <- struct{}{}:
	default:
		return // running a cell: it re-arms the timer when it ends
	}
	cm.drop(k)
	<-k.busy
}

// drop forgets k; callers hold cm.mu (and k's busy slot).
func (cm *CodeMode) drop(k *kernel) {
	delete(cm.kernels, k.session)
	k.gone = true
	if k.idle != nil {
		k.idle.Stop()
	}
	if len(cm.evicted) >= maxEvicted {
		var oldest string
		var at time.Time
		for s, t := range cm.evicted {
			if oldest == "" || t.Before(at) {
				oldest, at = s, t
			}
		}
		delete(cm.evicted, oldest)
	}
	cm.evicted[k.session] = time.Now()
}

// makeRoom evicts the least recently used idle kernel when MaxKernels are
// held; callers hold cm.mu.
func (cm *CodeMode) makeRoom() error {
	for len(cm.kernels) >= cm.cfg.MaxKernels {
		var lru *kernel
		for _, k := range cm.kernels {
			if len(k.busy) == 0 && (lru == nil || k.lastUsed.Before(lru.lastUsed)) {
				lru = k
			}
		}
		if lru == nil {
			return ErrTooManyKernels
		}
		select {
		case lru.busy <- struct{}{}:
			cm.drop(lru)
			<-lru.busy
		default:
		}
	}
	return nil
}

// discard drops a kernel a cell left unusable; the session's next cell gets
// a fresh one (restored from the saved state when Persist is on).
func (cm *CodeMode) discard(k *kernel) {
	cm.mu.Lock()
	defer cm.mu.Unlock()
	if cm.kernels[k.session] == k {
		delete(cm.kernels, k.session)
	}
	k.gone = true
	if k.idle != nil {
		k.idle.Stop()
	}
}

// Sessions returns the number of interpreters held.
func (cm *CodeMode) Sessions() int {
	cm.mu.Lock()
	defer cm.mu.Unlock()
	return len(cm.kernels)
}

// Close aborts running cells and drops every interpreter. Saved states stay
// in the database.
func (cm *CodeMode) Close() error {
	cm.mu.Lock()
	cm.closed = true
	ks := cm.kernels
	cm.kernels = map[string]*kernel{}
	for _, k := range ks {
		k.gone = true
		if k.idle != nil {
			k.idle.Stop()
		}
	}
	cm.mu.Unlock()
	for _, k := range ks {
		k.interruptRunning(ReasonCancelled)
	}
	return nil
}

// executeDescription is the execute tool's description: how the
// environment works and the functions it offers.
func (cm *CodeMode) executeDescription() string {
	var b strings.Builder
	b.WriteString(`Run JavaScript in your persistent code environment (one per conversation) and get back {stdout, result, error, status, truncated, execution_count}.
Use it to call tools from code: several at once, in loops, with results feeding later calls, in one step instead of one tool call per step.
- Tools are async functions taking one object of parameters: ` + "`const w = await get_weather({city: \"Paris\"})`" + `. A tool's JSON result arrives as a value, other results as a string. Run independent calls in parallel with ` + "`await Promise.all([...])`" + `; a failed call throws an Error whose message says why (catch it with try/catch).
- Top-level let/const/var/function/class declarations persist to later cells; declarations inside blocks do not. Top-level await works.
- The value of the last expression is the cell's result. console.log (or print) writes stdout. Output is capped at ` + fmt.Sprint(cm.cfg.MaxOutputChars) + ` characters: print summaries, keep data in variables.
- The environment is a sandbox: standard JavaScript only, no require/import, network, files or timers; Date is frozen at the cell's start. Limits per cell: ` +
		fmt.Sprintf("%v of CPU, %v in all, %d MiB of memory, call depth %d, %d tool calls.", cm.cfg.CPUTimeLimit, cm.cfg.CellTimeout, cm.cfg.MemoryLimit>>20, cm.cfg.MaxCallDepth, cm.cfg.MaxToolCalls))
	if cm.cfg.Persist {
		fmt.Fprintf(&b, "\n- Variables (JSON values; functions as source) are saved after each successful cell and survive restarts; a variable over %d bytes or state over %d bytes is not saved.", cm.cfg.MaxVariableBytes, cm.cfg.MaxSnapshotBytes)
	}
	if cm.cfg.Results != nil {
		b.WriteString("\n- Stored (offloaded) tool results: `await results.get(id)` (whole text), `results.read(id, {start_line, end_line})`, `results.search(id, pattern, {context_lines})`, `results.ids({limit})`.")
	}
	if len(cm.handles) > 0 {
		b.WriteString("\nFunctions:")
		for _, h := range cm.handles {
			fmt.Fprintf(&b, "\n- %s(%s): %s", h.callName(), compactSchema(h.def.Parameters), oneLine(h.def.Description))
			if h.refusal != "" {
				b.WriteString(" [not callable from code: it needs a human]")
			}
		}
	}
	return b.String()
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// endCellSpan records a cell's outcome on its span (tracing on only).
func endCellSpan(span oteltrace.Span, session string, cell Cell, err error) {
	span.SetAttributes(attribute.String("agentry.codemode.session", session), attribute.Int("agentry.codemode.execution_count", cell.ExecutionCount),
		attribute.String("agentry.codemode.status", string(cell.Status)))
	if err == nil && cell.Error != nil {
		span.SetStatus(codes.Error, cell.Error.Message)
	}
	otelspan.End(span, err)
}
