package codemode

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentryhq/agentry/internal/clip"
	"github.com/dop251/goja"
)

// kernel is one session's interpreter. A cell runs on the goroutine of the
// execute call that holds the kernel's busy slot; goja's runtime is used by
// one goroutine at a time.
type kernel struct {
	cm      *CodeMode
	session string
	owner   string
	// busy is held while a cell runs (and while the kernel is set up).
	busy chan struct{}

	rt     *goja.Runtime
	sb     *sandbox
	define goja.Value // defineGlobal, made once
	errCtr goja.Value // Error, captured before any cell could replace it
	count  int
	// clock is what Date reads: the current cell's start, so code cannot
	// time itself.
	clock time.Time
	// cell is the running cell, nil between cells (runtime goroutine only);
	// current is the same for other goroutines (restart, close).
	cell    *cellRun
	current atomic.Pointer[cellRun]
	// broken: an internal error left the runtime unusable; the kernel is
	// dropped (aborted cells get a rebuilt runtime instead).
	broken bool
	// restored is false until the first cell applied pending, the snapshot
	// the kernel starts from (loaded from pendingFrom).
	restored    bool
	pending     *snapshotDoc
	pendingFrom string
	// positions maps recent cells' positions to their code (runtime
	// goroutine only).
	positions cellPositions
	// notice is prepended to the next cell's notice.
	notice string
	// snapshot bookkeeping (see snapshot.go).
	lastSaved   [32]byte
	lastSkipped string
	// saveMu is held by a save; noSave (guarded by it) is set when the
	// session was restarted or forgotten, so a cell that ends after that
	// does not write its state back.
	saveMu sync.Mutex
	noSave bool

	// Registry bookkeeping, guarded by cm.mu.
	lastUsed time.Time
	idle     *time.Timer
	gone     bool
}

// cellRun is the state of one running cell.
type cellRun struct {
	k      *kernel
	ctx    context.Context
	cancel context.CancelFunc
	parent context.Context
	user   string // the run's user

	stdout    strings.Builder
	truncated bool

	// done carries finished async operations to the cell's loop; finished
	// is closed when the cell ends, so late operations do not block.
	done     chan asyncDone
	finished chan struct{}
	pending  map[int]asyncPending
	nextID   int
	inflight int
	calls    int
	sem      chan struct{}

	reason  atomic.Pointer[string]
	inVM    atomic.Bool
	cpuUsed time.Duration

	// CPU accounting of the current vm call (see vm).
	cpuMu      sync.Mutex
	cpuTimer   *time.Timer
	cpuClock   int32
	cpuPrecise bool
	cpuStart   time.Duration
	wallStart  time.Time

	rejections []*goja.Promise
	callIDBase string
	// restoring: the cell restores a saved state, whose code (a class's
	// static blocks) may not call tools.
	restoring bool
	// saving: the cell reads the variables to save them, which runs their
	// toJSON methods and getters; they may not call tools either.
	saving bool
}

type asyncPending struct {
	resolve, reject func(any) error
}

// asyncDone is the outcome of an async operation started by code.
type asyncDone struct {
	id int
	// text is the outcome; json says it is JSON to parse into a value.
	text string
	json bool
	err  error
	// errName is the name of the Error the promise rejects with.
	errName string
}

func (c *cellRun) abort(reason string) {
	if c.reason.CompareAndSwap(nil, &reason) {
		c.k.rt.Interrupt(abortSignal(reason))
		c.cancel()
	}
}

func (c *cellRun) aborted() string {
	if p := c.reason.Load(); p != nil {
		return *p
	}
	return ""
}

// abortSignal is the value a cell's runtime is interrupted with.
type abortSignal string

func newKernel(cm *CodeMode, session, owner string) *kernel {
	return &kernel{cm: cm, session: session, owner: owner, busy: make(chan struct{}, 1)}
}

// start builds the runtime: the sandbox, console and the handles.
func (k *kernel) start() error {
	cfg := &k.cm.cfg
	rt := goja.New()
	rt.SetMaxCallStackSize(cfg.MaxCallDepth)
	rt.SetTimeSource(func() time.Time { return k.clock })
	rt.SetPromiseRejectionTracker(func(p *goja.Promise, op goja.PromiseRejectionOperation) {
		c := k.cell
		if c == nil {
			return
		}
		if op == goja.PromiseRejectionReject {
			c.rejections = append(c.rejections, p)
			return
		}
		for i, q := range c.rejections {
			if q == p {
				c.rejections = append(c.rejections[:i], c.rejections[i+1:]...)
				break
			}
		}
	})
	k.rt = rt
	k.errCtr = rt.GlobalObject().Get("Error")
	k.sb = &sandbox{rt: rt, lim: k.cm.lim, aborted: func() string {
		if c := k.cell; c != nil {
			return c.aborted()
		}
		return ""
	}, abort: func(reason string) {
		if c := k.cell; c != nil {
			c.abort(reason)
		}
	}}
	if err := k.sb.install(); err != nil {
		return fmt.Errorf("codemode: setting up the sandbox: %w", err)
	}
	return k.bindHandles()
}

// run executes one cell.
func (k *kernel) run(ctx context.Context, user, code string) (cell Cell) {
	cfg := &k.cm.cfg
	k.count++
	cell = Cell{ExecutionCount: k.count, Status: StatusOK, Notice: k.notice}
	k.notice = ""
	if len(code) > cfg.MaxCodeBytes {
		cell.Status = StatusError
		cell.Error = &CellError{Name: "SyntaxError", Message: fmt.Sprintf("the cell is %d bytes, over the limit of %d: split it into several cells", len(code), cfg.MaxCodeBytes)}
		return cell
	}
	name := cellName(k.count)
	rw, err := rewrite(code, name)
	if err != nil {
		cell.Status = StatusError
		cell.Error = &CellError{Name: "SyntaxError", Message: strings.TrimPrefix(err.Error(), "SyntaxError: ")}
		return cell
	}
	k.positions.add(name, rw.pos)
	if !k.restored {
		// Restoring has limits of its own: the cell's code gets its whole
		// budget.
		notice, stop := k.restore(ctx, user)
		cell.Notice = joinNotice(cell.Notice, notice)
		if stop != "" {
			cell.Status = StatusAborted
			cell.Error = &CellError{Name: "Aborted", Reason: stop, Message: k.abortMessage(stop, "") + " (before the saved state was restored)"}
			return cell
		}
	}
	c, end := k.begin(ctx, user)
	defer end()
	var promise *goja.Promise
	_, err = k.vm(func() (goja.Value, error) {
		if len(rw.globals) > 0 {
			if _, err := k.rt.RunString("var " + strings.Join(rw.globals, ", ") + ";"); err != nil {
				return nil, err
			}
		}
		prog, err := compile(name, rw.src)
		if err != nil {
			return nil, cellSyntaxError(err, rw.pos)
		}
		fnv, err := k.rt.RunProgram(prog)
		if err != nil {
			return nil, err
		}
		wrap, ok := goja.AssertFunction(fnv)
		if !ok {
			return nil, errors.New("the cell did not compile to a function")
		}
		g := k.rt.GlobalObject()
		fnv, err = wrap(goja.Undefined(), g, k.define)
		if err != nil {
			return nil, err
		}
		fn, ok := goja.AssertFunction(fnv)
		if !ok {
			return nil, errors.New("the cell did not compile to a function")
		}
		pv, err := fn(g)
		if err != nil {
			return nil, err
		}
		promise, _ = pv.Export().(*goja.Promise)
		return pv, nil
	})
	if err == nil && promise == nil {
		err = errors.New("the cell did not return a promise")
	}
	if err == nil {
		err = k.loop(c, promise)
	}
	k.finish(c, promise, err, &cell)
	return cell
}

func joinNotice(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + "\n" + b
}

func (k *kernel) newCell(parent context.Context) *cellRun {
	cfg := &k.cm.cfg
	ctx, cancel := context.WithTimeout(parent, cfg.CellTimeout)
	return &cellRun{k: k, ctx: ctx, cancel: cancel, parent: parent,
		done:       make(chan asyncDone),
		finished:   make(chan struct{}),
		pending:    map[int]asyncPending{},
		sem:        make(chan struct{}, cfg.MaxParallelCalls),
		callIDBase: "code_" + newHex(6) + "_" + strconv.Itoa(k.count)}
}

// begin makes a new cellRun the running one: the limits (CPU time, memory,
// the cell timeout) apply to what runs on the runtime until end is called.
func (k *kernel) begin(ctx context.Context, user string) (c *cellRun, end func()) {
	c = k.newCell(ctx)
	c.user = user
	k.cell = c
	k.current.Store(c)
	k.rt.ClearInterrupt()
	k.clock = time.Now()
	k.cm.watch.enter(c)
	stopWatch := context.AfterFunc(c.ctx, func() {
		if c.parent.Err() != nil {
			c.abort(ReasonCancelled)
		} else {
			c.abort(ReasonTimeout)
		}
	})
	return c, func() {
		stopWatch()
		k.cm.watch.leave(c)
		k.cell = nil
		k.current.Store(nil)
		c.end()
	}
}

// end releases what the cell holds: its context, its CPU timer, and the
// async operations still running (they finish without being waited for).
func (c *cellRun) end() {
	c.cancel()
	close(c.finished)
	c.cpuMu.Lock()
	if c.cpuTimer != nil {
		c.cpuTimer.Stop()
	}
	c.cpuMu.Unlock()
}

// defineGlobal makes a function declared at a cell's top level a global
// under its own name (the rewrite renamed its declaration).
func (k *kernel) defineGlobal(c goja.FunctionCall) goja.Value {
	name := arg(c.Arguments, 0).String()
	fn, ok := arg(c.Arguments, 1).(*goja.Object)
	if !ok || !isIdentifier(name) {
		return goja.Undefined()
	}
	_ = fn.DefineDataProperty("name", k.rt.ToValue(name), goja.FLAG_FALSE, goja.FLAG_TRUE, goja.FLAG_FALSE)
	if err := k.rt.GlobalObject().Set(name, fn); err != nil {
		// A name the environment binds (a tool's handle): its setter's
		// TypeError is the declaration's.
		var ex *goja.Exception
		if errors.As(err, &ex) {
			panic(ex.Value())
		}
		panic(k.rt.NewTypeError(err.Error()))
	}
	return goja.Undefined()
}

// vm runs f, which executes JavaScript, on the cell's CPU budget. The
// goroutine is locked to its thread meanwhile, so the thread's CPU clock
// measures the cell (on Linux; elsewhere the time spent in f counts).
func (k *kernel) vm(f func() (goja.Value, error)) (v goja.Value, err error) {
	c := k.cell
	if r := c.aborted(); r != "" {
		return nil, &abortError{reason: r}
	}
	limit := k.cm.cfg.CPUTimeLimit
	if c.cpuUsed >= limit {
		c.abort(ReasonCPUTime)
		return nil, &abortError{reason: ReasonCPUTime}
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	c.cpuMu.Lock()
	c.cpuClock, c.cpuPrecise = threadClock()
	c.wallStart = time.Now()
	if c.cpuPrecise {
		c.cpuStart, _ = clockRead(c.cpuClock)
	}
	if c.cpuTimer == nil {
		c.cpuTimer = time.AfterFunc(limit-c.cpuUsed, c.checkCPU)
	} else {
		c.cpuTimer.Reset(limit - c.cpuUsed)
	}
	c.inVM.Store(true)
	c.cpuMu.Unlock()
	defer func() {
		c.cpuMu.Lock()
		c.inVM.Store(false)
		c.cpuTimer.Stop()
		c.cpuUsed += c.vmTime()
		c.cpuMu.Unlock()
		if p := recover(); p != nil {
			// A limit interrupting JavaScript that Go called back into (a
			// getter or toJSON read while rendering the result or an
			// error) arrives as a panic: it is that limit's abort.
			if r := c.aborted(); r != "" {
				err = &abortError{reason: r}
				return
			}
			k.broken = true
			err = &abortError{reason: ReasonInternal, detail: fmt.Sprint(p)}
		}
	}()
	// Go reading a value (a property, a string) runs the code's getters
	// and toString, and an exception they throw arrives as a panic. Try
	// unwinds goja's stacks and returns it: it is the code's error, not a
	// failure of the runtime (which would drop the session's variables).
	// Other panics (a limit's interrupt) still reach the recover above.
	if ex := k.rt.Try(func() { v, err = f() }); ex != nil {
		return nil, ex
	}
	return v, err
}

// cpu is the CPU time the cell has used; setCPU replaces it (restoring
// gives JSON values budgets of their own, see kernel.apply).
func (c *cellRun) cpu() time.Duration {
	c.cpuMu.Lock()
	defer c.cpuMu.Unlock()
	return c.cpuUsed
}

func (c *cellRun) setCPU(d time.Duration) {
	c.cpuMu.Lock()
	c.cpuUsed = d
	c.cpuMu.Unlock()
}

// vmTime is the CPU time of the current vm call; callers hold cpuMu.
func (c *cellRun) vmTime() time.Duration {
	if c.cpuPrecise {
		if now, ok := clockRead(c.cpuClock); ok {
			return now - c.cpuStart
		}
	}
	return time.Since(c.wallStart)
}

// checkCPU runs when the CPU budget may be spent: the time was wall-clock
// time, and time spent waiting for a CPU is not CPU time, so it re-arms for
// what is left until the thread's clock says the budget is gone.
func (c *cellRun) checkCPU() {
	c.cpuMu.Lock()
	defer c.cpuMu.Unlock()
	if !c.inVM.Load() {
		return
	}
	limit := c.k.cm.cfg.CPUTimeLimit
	if used := c.cpuUsed + c.vmTime(); used < limit {
		c.cpuTimer.Reset(limit - used)
		return
	}
	c.abort(ReasonCPUTime)
}

// abortError ends a cell as aborted.
type abortError struct {
	reason string
	detail string
}

func (e *abortError) Error() string { return "aborted: " + e.reason }

// loop settles the cell's async operations until its promise is settled
// and nothing it started is still running.
func (k *kernel) loop(c *cellRun, p *goja.Promise) error {
	for {
		if r := c.aborted(); r != "" {
			return &abortError{reason: r}
		}
		settled := p.State() != goja.PromiseStatePending
		if settled && c.inflight == 0 {
			return nil
		}
		if c.inflight == 0 {
			return errStuck
		}
		select {
		case d := <-c.done:
			c.inflight--
			if _, err := k.vm(func() (goja.Value, error) { return nil, k.settle(d) }); err != nil {
				return err
			}
		case <-c.ctx.Done():
			// The AfterFunc set the reason; the loop reports it.
		}
	}
}

var errStuck = errors.New("the cell awaits a promise that nothing will settle (no tool call is running): resolve it, or do not await it")

// settle resolves or rejects the promise of a finished async operation.
func (k *kernel) settle(d asyncDone) error {
	c := k.cell
	p, ok := c.pending[d.id]
	if !ok {
		return nil
	}
	delete(c.pending, d.id)
	if d.err != nil {
		return p.reject(k.newError(d.errName, d.err.Error()))
	}
	if !d.json {
		return p.resolve(k.rt.ToValue(d.text))
	}
	v, err := k.fromJSON(d.text)
	if err != nil {
		return p.reject(k.newError("ToolError", err.Error()))
	}
	return p.resolve(v)
}

// fromJSON turns a tool's output into a value: JSON becomes the value it
// encodes, anything else a string.
func (k *kernel) fromJSON(text string) (goja.Value, error) {
	if !looksLikeJSON(text) || k.sb.checkJSONText(text) != nil {
		return k.rt.ToValue(text), nil
	}
	v, err := k.sb.parseJSON(goja.Undefined(), k.rt.ToValue(text))
	if err != nil {
		var ex *goja.Exception
		if errors.As(err, &ex) {
			return k.rt.ToValue(text), nil // not JSON after all
		}
		return nil, err
	}
	return v, nil
}

func looksLikeJSON(s string) bool {
	s = strings.TrimSpace(s)
	if s == "" {
		return false
	}
	switch s[0] {
	case '{', '[', '"', '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		return true
	}
	return s == "true" || s == "false" || s == "null"
}

// newError builds an Error with a name; created on the runtime goroutine.
func (k *kernel) newError(name, msg string) goja.Value {
	o, err := k.rt.New(k.errCtr, k.rt.ToValue(msg))
	if err != nil {
		return k.rt.ToValue(msg)
	}
	if name != "" {
		// Defined, not assigned: a setter a cell put on Error.prototype
		// must not take the name of a tool's error.
		_ = o.DefineDataProperty("name", k.rt.ToValue(name), goja.FLAG_TRUE, goja.FLAG_TRUE, goja.FLAG_TRUE)
	}
	return o
}

// finish turns the cell's end into its Cell.
func (k *kernel) finish(c *cellRun, p *goja.Promise, err error, cell *Cell) {
	cfg := &k.cm.cfg
	defer func() {
		// A limit hit while rendering the result or the error (a getter,
		// toJSON) aborts the cell like any other.
		if r := c.aborted(); r != "" && cell.Status != StatusAborted {
			cell.Result = nil
			k.failure(c, &abortError{reason: r}, cell)
		}
		out, cut := clip.Bytes(c.stdout.String(), cfg.MaxOutputChars)
		cell.Stdout = out
		cell.Truncated = cell.Truncated || cut || c.truncated
	}()
	if err != nil {
		k.failure(c, err, cell)
		return
	}
	switch p.State() {
	case goja.PromiseStateFulfilled:
		var res string
		var ok, cut bool
		_, err := k.vm(func() (goja.Value, error) {
			res, ok, cut = k.display(p.Result(), cfg.MaxOutputChars, true)
			return nil, nil
		})
		if err != nil {
			k.failure(c, err, cell)
			return
		}
		if ok {
			cell.Result, cell.Truncated = []byte(res), cut
		}
		for _, rj := range c.rejections {
			if rj != p {
				cell.Status = StatusError
				cell.Error = k.describe(rj.Result())
				cell.Error.Message = "unhandled promise rejection: " + cell.Error.Message
				return
			}
		}
	case goja.PromiseStateRejected:
		cell.Status = StatusError
		cell.Error = k.describe(p.Result())
	}
}

// failure records an aborted or failed cell.
func (k *kernel) failure(c *cellRun, err error, cell *Cell) {
	var ab *abortError
	var intr *goja.InterruptedError
	var so *goja.StackOverflowError
	var ex *goja.Exception
	var cse *goja.CompilerSyntaxError
	var se *syntaxError
	reason, detail := "", ""
	switch {
	case errors.As(err, &ab):
		reason, detail = ab.reason, ab.detail
	case errors.As(err, &intr):
		reason = c.aborted()
		if s, ok := intr.Value().(abortSignal); ok {
			reason = string(s)
		}
	case errors.As(err, &so):
		reason = ReasonCallDepth
	case errors.Is(err, errStuck):
		cell.Status = StatusError
		cell.Error = &CellError{Name: "Error", Message: err.Error()}
		return
	case errors.As(err, &se):
		cell.Status = StatusError
		cell.Error = &CellError{Name: "SyntaxError", Message: strings.TrimPrefix(se.Error(), "SyntaxError: ")}
		return
	case errors.As(err, &cse):
		cell.Status = StatusError
		cell.Error = &CellError{Name: "SyntaxError", Message: strings.TrimPrefix(k.positions.fixStack(cse.Error()), "SyntaxError: ")}
		return
	case errors.As(err, &ex):
		cell.Status = StatusError
		cell.Error = k.describe(ex.Value())
		return
	default:
		reason, detail = ReasonInternal, err.Error()
	}
	if reason == "" {
		reason = ReasonInternal
	}
	c.abort(reason) // cancels the tool calls still running
	if reason == ReasonInternal {
		k.broken = true
	}
	cell.Status = StatusAborted
	cell.Error = &CellError{Name: "Aborted", Reason: reason, Message: k.abortMessage(reason, detail)}
	if k.broken {
		cell.Error.Message += "; the environment was reset: variables from earlier cells are gone"
		if k.cm.cfg.Persist {
			cell.Error.Message += " (the last saved state will be restored by the next cell)"
		}
	}
}

func (k *kernel) abortMessage(reason, detail string) string {
	cfg := &k.cm.cfg
	switch reason {
	case ReasonCPUTime:
		return fmt.Sprintf("the cell ran JavaScript for more than %v (the CPU time limit); make it do less work per cell", cfg.CPUTimeLimit)
	case ReasonMemory:
		return fmt.Sprintf("the cell grew the heap by more than %d MiB (the memory limit); work on smaller pieces of data", cfg.MemoryLimit>>20)
	case ReasonCallDepth:
		return fmt.Sprintf("the cell nested calls deeper than %d (the call depth limit); replace deep recursion with a loop", cfg.MaxCallDepth)
	case ReasonTimeout:
		return fmt.Sprintf("the cell ran for more than %v (the cell timeout), tool calls included", cfg.CellTimeout)
	case ReasonCancelled:
		return "the run was cancelled while the cell ran"
	case ReasonRestart:
		return "the environment was restarted while the cell ran"
	}
	if detail != "" {
		return "the interpreter failed: " + detail
	}
	return "the interpreter failed"
}

// describe turns a thrown value into a CellError.
func (k *kernel) describe(v goja.Value) *CellError {
	e := &CellError{Name: "Error"}
	limit := k.cm.cfg.MaxOutputChars
	_, err := k.vm(func() (goja.Value, error) {
		if o, ok := v.(*goja.Object); ok {
			if st := o.Get("stack"); defined(st) {
				if s := shortText(st, limit); strings.Contains(s, "cell[") || strings.Contains(s, "saved[") {
					e.Stack = k.positions.fixStack(s)
				}
			}
			if m := o.Get("message"); defined(m) {
				e.Message = shortText(m, limit)
				if n := o.Get("name"); defined(n) {
					e.Name = shortText(n, maxErrorName)
				}
				return nil, nil
			}
		}
		e.Name = ""
		s, _, _ := k.display(v, k.cm.cfg.MaxOutputChars, false)
		e.Message = s
		return nil, nil
	})
	if err != nil && e.Message == "" {
		e.Message = "(the thrown value could not be read)"
	}
	return e
}

// maxErrorName caps the name of an error, which code can set to anything.
const maxErrorName = 100

// shortText is v as text (ToString) of at most limit bytes, marked "…" when
// cut: an error's message or stack is given to the model no longer than a
// result (a long string is not copied whole to be cut).
func shortText(v goja.Value, limit int) string {
	cut := false
	if s, ok := v.(goja.String); ok && s.Length() > limit {
		v, cut = s.Substring(0, limit), true
	}
	t, clipped := clip.Bytes(v.String(), limit)
	if cut || clipped {
		t += "…"
	}
	return t
}

// display renders a value for output: JSON when it has one, else a short
// description. asJSON makes strings JSON strings too (for results), and
// keeps the output valid JSON within limit: a value whose JSON is longer
// becomes a string of its start marked with "…", and cut is set.
func (k *kernel) display(v goja.Value, limit int, asJSON bool) (out string, ok, cut bool) {
	if v == nil || goja.IsUndefined(v) {
		return "undefined", false, false
	}
	text := func(s string) (string, bool, bool) {
		if !asJSON {
			return s, true, false
		}
		q, cut := quoteWithin(s, limit)
		return q, true, cut
	}
	if sym, ok := v.(*goja.Symbol); ok {
		// As JavaScript writes it: its String() is only its description.
		return text("Symbol(" + sym.String() + ")")
	}
	if o, ok := v.(*goja.Object); ok {
		if _, isFn := goja.AssertFunction(o); isFn {
			return text("[Function: " + o.Get("name").String() + "]")
		}
		switch brand(o) {
		case "Error":
			return text(o.Get("name").String() + ": " + o.Get("message").String())
		case "Map", "Set", "WeakMap", "WeakSet", "Promise":
			return text("[object " + brand(o) + "]")
		}
	}
	if !asJSON {
		if _, isObj := v.(*goja.Object); !isObj {
			return shortText(v, limit), true, false
		}
	}
	e := &encoder{rt: k.rt, limit: limit + 1, maxArray: k.cm.lim.maxArray}
	out, ok, err := e.encode(v)
	switch {
	case errors.Is(err, errTooLarge):
		part := e.b.String()
		if str, isStr := v.(goja.String); isStr {
			// Too long to quote whole: its start, not a copy of all of it.
			part = str.Substring(0, min(str.Length(), limit+1)).String()
		}
		if !asJSON {
			return part + "…", true, true
		}
		q, _ := quoteWithin(part+"…", limit)
		return q, true, true
	case err != nil:
		return text("[" + err.Error() + " value]")
	case !ok:
		return "undefined", false, false
	}
	return out, true, false
}

// quoteWithin is s as a JSON string of at most limit bytes: when its JSON is
// longer, that of its longest start that fits with "…" after it (cut).
func quoteWithin(s string, limit int) (string, bool) {
	if q := quote(s); len(q) <= limit {
		return q, false
	}
	// Escapes make the JSON up to six times longer than the text: search
	// the longest start that fits.
	lo, hi := 0, len(s)
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if start, _ := clip.Bytes(s, mid); len(quote(start+"…")) <= limit {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	start, _ := clip.Bytes(s, lo)
	return quote(start + "…"), true
}

// brand is an object's kind as Object.prototype.toString reports it (goja's
// own class name is "Object" for maps, sets and promises).
func brand(o *goja.Object) string {
	// Only a string tag counts; any other value is not converted
	// (exporting an array copies all of it).
	if tag, ok := o.GetSymbol(goja.SymToStringTag).(goja.String); ok {
		return tag.String()
	}
	return o.ClassName()
}

// print appends a line to the cell's stdout, up to the output cap.
func (c *cellRun) print(line string) {
	limit := c.k.cm.cfg.MaxOutputChars
	if c.truncated {
		return
	}
	if c.stdout.Len()+len(line)+1 > limit {
		room := limit - c.stdout.Len()
		if room > 0 {
			cut, _ := clip.Bytes(line, room)
			c.stdout.WriteString(cut)
		}
		c.truncated = true
		return
	}
	c.stdout.WriteString(line)
	c.stdout.WriteByte('\n')
}

// interruptRunning aborts the cell running in k, if any (any goroutine).
func (k *kernel) interruptRunning(reason string) {
	if c := k.current.Load(); c != nil {
		c.abort(reason)
	}
}
