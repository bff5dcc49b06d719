package codemode

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/model"
	"github.com/agentryhq/agentry/run"
	"github.com/agentryhq/agentry/tool"
	"github.com/dop251/goja"
)

// handle is how one tool appears in code.
type handle struct {
	name string // the tool's name
	js   string // its global function name; "" when only tools[name] reaches it
	def  tool.Definition
	// refusal, when set, is the error every call gets (tools that would pause
	// the run for a human).
	refusal string
}

// reservedNames are globals a handle may not take.
var reservedNames = func() map[string]bool {
	m := map[string]bool{}
	for _, n := range strings.Fields(`console print results tools globalThis undefined NaN Infinity Object Function
		Array String Number Boolean Symbol RegExp Date Math JSON Reflect Promise Map Set WeakMap WeakSet Error
		AggregateError TypeError ReferenceError SyntaxError RangeError EvalError URIError isNaN isFinite parseInt
		parseFloat decodeURI decodeURIComponent encodeURI encodeURIComponent escape unescape`) {
		m[n] = true
	}
	return m
}()

// jsReserved are JavaScript's reserved words (and await/async, which read
// badly as tool names).
var jsReserved = map[string]bool{"break": true, "case": true, "catch": true, "class": true, "const": true,
	"continue": true, "debugger": true, "default": true, "delete": true, "do": true, "else": true, "enum": true,
	"export": true, "extends": true, "false": true, "finally": true, "for": true, "function": true, "if": true,
	"import": true, "in": true, "instanceof": true, "new": true, "null": true, "return": true, "super": true,
	"switch": true, "this": true, "throw": true, "true": true, "try": true, "typeof": true, "var": true,
	"void": true, "while": true, "with": true, "yield": true, "let": true, "static": true, "implements": true,
	"interface": true, "package": true, "private": true, "protected": true, "public": true, "await": true,
	"async": true, "arguments": true, "eval": true}

// handleName is a tool name as a JavaScript identifier ('-' becomes '_'), or
// "" when it cannot be one.
func handleName(name string) string {
	js := strings.ReplaceAll(name, "-", "_")
	if js == "" || (js[0] >= '0' && js[0] <= '9') || jsReserved[js] || reservedNames[js] || strings.HasPrefix(js, "__cm_") {
		return ""
	}
	return js
}

func isIdentifier(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		if !(r == '_' || r == '$' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || i > 0 && '0' <= r && r <= '9') {
			return false
		}
	}
	return true
}

func refusalFor(d *tool.Definition) string {
	what := ""
	switch {
	case d.RequiresConfirmation:
		what = "a human's confirmation"
	case d.RequiresUserInput:
		what = "input from the user"
	case d.ExternalExecution:
		what = "execution outside the agent"
	default:
		return ""
	}
	return fmt.Sprintf("%s needs %s, which pauses the run; code cannot pause, so %s cannot be called from code (call it as a regular tool if you have it, or ask the user)", d.Name, what, d.Name)
}

func newHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// bindHandles sets console, print, the tool handles, tools and results.
//
// Code cannot replace any of them, nor their members: each is a
// non-configurable accessor whose setter throws a TypeError naming it, and
// the objects take no new members. A snapshot leaves them out and a restore
// binds them afresh, so a replacement lasted only until the runtime was
// rebuilt or restored, and the session disagreed with itself about what
// `echo` was (see docs/adr/codemode-bound-names.md). A setter, unlike a
// read-only data property, fails in sloppy code too: `echo = 5` would be
// ignored without a word.
func (k *kernel) bindHandles() error {
	rt := k.rt
	g := rt.GlobalObject()
	k.define = rt.ToValue(k.defineGlobal)
	console := rt.NewObject()
	logFn := named(rt, k.sb.native(k.consoleLog), "log", 0)
	for _, m := range []string{"log", "info", "warn", "error", "debug"} {
		if err := bindReadOnly(rt, console, m, logFn, "console."+m+" is part of the environment"); err != nil {
			return err
		}
	}
	if err := bindReadOnly(rt, g, "console", console, "console is part of the environment"); err != nil {
		return err
	}
	if err := bindReadOnly(rt, g, "print", logFn, "print is part of the environment"); err != nil {
		return err
	}
	tools := rt.NewObject()
	for i := range k.cm.handles {
		h := &k.cm.handles[i]
		fn := k.sb.native(k.toolHandle(h))
		_ = fn.ToObject(rt).DefineDataProperty("name", rt.ToValue(h.name), goja.FLAG_FALSE, goja.FLAG_TRUE, goja.FLAG_FALSE)
		what := h.name + " is the function of the tool " + h.name
		if err := bindReadOnly(rt, tools, h.name, fn, what); err != nil {
			return err
		}
		if h.js != "" {
			if err := bindReadOnly(rt, g, h.js, fn, what); err != nil {
				return err
			}
		}
	}
	if err := bindReadOnly(rt, g, "tools", tools, "tools is part of the environment"); err != nil {
		return err
	}
	return bindReadOnly(rt, g, "results", k.resultsHandle(), "results is part of the environment")
}

// bindReadOnly defines o[name] as v, for good: assigning it throws a
// TypeError that says what it is, and it cannot be redefined or deleted.
// An object bound under it takes no new members. Globals are not
// enumerable, as JavaScript's own are not (a snapshot lists the enumerable
// ones); members of our objects are.
func bindReadOnly(rt *goja.Runtime, o *goja.Object, name string, v goja.Value, what string) error {
	enumerable := goja.FLAG_TRUE
	if o == rt.GlobalObject() {
		enumerable = goja.FLAG_FALSE
	}
	get := rt.ToValue(func(goja.FunctionCall) goja.Value { return v })
	set := rt.ToValue(func(goja.FunctionCall) goja.Value {
		panic(rt.NewTypeError("%s and cannot be replaced: give your variable another name", what))
	})
	if err := o.DefineAccessorProperty(name, get, set, goja.FLAG_FALSE, enumerable); err != nil {
		return err
	}
	if obj, ok := v.(*goja.Object); ok {
		if _, isFn := goja.AssertFunction(obj); !isFn {
			return preventExtensions(rt, obj)
		}
	}
	return nil
}

// consoleLog prints its arguments on one line. It renders only what still
// fits in the cell's output: rendering every argument up to the cap and
// cutting the line afterwards made one call spread over 20,000 long strings
// allocate 7 GB, in Go, where no limit stops it.
func (k *kernel) consoleLog(c goja.FunctionCall) goja.Value {
	cell := k.cell
	if cell == nil || cell.truncated {
		return goja.Undefined()
	}
	room := k.cm.cfg.MaxOutputChars - cell.stdout.Len()
	var line strings.Builder
	for i, v := range c.Arguments {
		if i > 0 {
			line.WriteByte(' ')
		}
		if line.Len() > room {
			break // print cuts the line and marks the output truncated
		}
		s, _, _ := k.display(v, room-line.Len()+1, false)
		line.WriteString(s)
	}
	cell.print(line.String())
	return goja.Undefined()
}

// startAsync runs op on its own goroutine and returns a promise the cell's
// loop settles with its outcome.
func (k *kernel) startAsync(op func(ctx context.Context) asyncDone) goja.Value {
	c := k.cell
	p, resolve, reject := k.rt.NewPromise()
	id := c.nextID
	c.nextID++
	c.pending[id] = asyncPending{resolve: resolve, reject: reject}
	c.inflight++
	go func() {
		d := op(c.ctx)
		d.id = id
		select {
		case c.done <- d:
		case <-c.finished: // the cell ended without waiting for it
		}
	}()
	return k.rt.ToValue(p)
}

// rejected returns a promise already rejected with an Error.
func (k *kernel) rejected(name, msg string) goja.Value {
	p, _, reject := k.rt.NewPromise()
	_ = reject(k.newError(name, msg))
	return k.rt.ToValue(p)
}

// toolHandle is the async function code calls for one tool. The call goes
// through the same tool.Set as the model's calls (lookup, JSON-schema
// validation with the same error text, timeout, panic recovery) and is
// recorded in the run with agent.RecordToolCall.
func (k *kernel) toolHandle(h *handle) func(goja.FunctionCall) goja.Value {
	cfg := &k.cm.cfg
	return func(fc goja.FunctionCall) goja.Value {
		c := k.cell
		if c == nil {
			return k.rejected("ToolError", h.name+" can only be called while a cell runs")
		}
		if h.refusal != "" {
			return k.rejected("ToolError", h.refusal)
		}
		if c.restoring {
			// Saved code runs again at every restore (each rebuild, each
			// new process): a tool call there would repeat a side effect
			// nobody asked for.
			return k.rejected("ToolError", h.name+" cannot be called while the saved state is restored (from a class's static block or computed key)")
		}
		if c.saving {
			// A save runs after every successful cell: the call would be
			// made again and again, outside any cell, its result unread.
			return k.rejected("ToolError", h.name+" cannot be called while the session's state is saved (from a toJSON method or a getter of a variable)")
		}
		if c.calls >= cfg.MaxToolCalls {
			return k.rejected("ToolError", fmt.Sprintf("%s: a cell may call tools at most %d times; do the rest in another cell", h.name, cfg.MaxToolCalls))
		}
		args, err := k.toolArgs(h, fc.Arguments)
		if err != nil {
			return k.rejected("TypeError", err.Error())
		}
		c.calls++
		callID := fmt.Sprintf("%s_%d", c.callIDBase, c.calls)
		return k.startAsync(func(ctx context.Context) asyncDone {
			select {
			case c.sem <- struct{}{}:
			case <-ctx.Done():
				return asyncDone{err: fmt.Errorf("%s was not called: %w", h.name, context.Cause(ctx)), errName: "ToolError"}
			}
			start := time.Now()
			res := k.cm.set.Execute(ctx, model.ToolCall{ID: callID, Name: h.name, Arguments: args})
			<-c.sem
			agent.RecordToolCall(ctx, run.ToolExecution{ToolCallID: callID, ToolName: h.name, ToolArgs: json.RawMessage(args),
				Result: res.Content, ToolCallError: res.IsError(), Metrics: &run.Metrics{Duration: res.Duration.Seconds()},
				CreatedAt: start.Unix()})
			if res.IsError() {
				return asyncDone{err: errors.New(res.Content), errName: "ToolError"}
			}
			if len(res.Content) > cfg.MaxResultBytes {
				return asyncDone{err: fmt.Errorf("%s returned %d bytes, over the limit of %d for results in code", h.name, len(res.Content), cfg.MaxResultBytes), errName: "ResultTooLarge"}
			}
			return asyncDone{text: res.Content, json: true}
		})
	}
}

// toolArgs encodes a handle's one argument, an object of parameters.
func (k *kernel) toolArgs(h *handle, args []goja.Value) (string, error) {
	usage := fmt.Sprintf("%s takes one object of parameters, e.g. await %s({...})", h.name, h.callName())
	if len(args) > 1 {
		return "", errors.New(usage)
	}
	v := arg(args, 0)
	if !defined(v) || goja.IsNull(v) {
		return "{}", nil
	}
	o, ok := v.(*goja.Object)
	if !ok || o.ClassName() == "Array" {
		return "", errors.New(usage)
	}
	if _, isFn := goja.AssertFunction(o); isFn {
		return "", errors.New(usage)
	}
	e := &encoder{rt: k.rt, limit: k.cm.cfg.MaxResultBytes, maxArray: k.cm.lim.maxArray}
	out, _, err := e.encode(o)
	if err != nil {
		return "", fmt.Errorf("%s: the parameters cannot be sent as JSON (%v)", h.name, err)
	}
	return out, nil
}

func (h *handle) callName() string {
	if h.js != "" {
		return h.js
	}
	return fmt.Sprintf("tools[%q]", h.name)
}

// resultsHandle is the `results` object: offloaded tool results, through
// Config.Results. Every method is async.
func (k *kernel) resultsHandle() goja.Value {
	rt := k.rt
	o := rt.NewObject()
	store := k.cm.cfg.Results
	// method defines one method; decode runs on the runtime's goroutine and
	// returns the operation to run on its own.
	method := func(name string, decode func(scope Scope, a []goja.Value) (func(ctx context.Context) asyncDone, error)) {
		_ = bindReadOnly(rt, o, name, named(rt, k.sb.native(func(fc goja.FunctionCall) goja.Value {
			c := k.cell
			switch {
			case c == nil:
				return k.rejected("Error", "results can only be read while a cell runs")
			case store == nil:
				return k.rejected("Error", "results."+name+": tool-result offloading is not enabled for this agent, so there are no stored results")
			case c.calls >= k.cm.cfg.MaxToolCalls:
				return k.rejected("Error", fmt.Sprintf("results.%s: a cell may make at most %d calls", name, k.cm.cfg.MaxToolCalls))
			}
			scope := Scope{SessionID: k.session, UserID: c.user}
			op, err := decode(scope, fc.Arguments)
			if err != nil {
				return k.rejected("TypeError", "results."+name+": "+err.Error())
			}
			c.calls++
			return k.startAsync(op)
		}), name, 0), "results."+name+" is part of the environment")
	}
	asJSON := func(v any, err error) asyncDone {
		if err != nil {
			return asyncDone{err: err, errName: "Error"}
		}
		b, err := json.Marshal(v)
		if err != nil {
			return asyncDone{err: err, errName: "Error"}
		}
		return asyncDone{text: string(b), json: true}
	}
	method("get", func(scope Scope, a []goja.Value) (func(context.Context) asyncDone, error) {
		id, err := resultID(a)
		if err != nil {
			return nil, err
		}
		return func(ctx context.Context) asyncDone {
			text, err := store.Get(ctx, scope, id)
			if err != nil {
				return asyncDone{err: err, errName: "Error"}
			}
			if len(text) > k.cm.cfg.MaxResultBytes {
				return asyncDone{err: fmt.Errorf("result %s is %d bytes, over the limit of %d for code: use results.read or results.search", id, len(text), k.cm.cfg.MaxResultBytes), errName: "ResultTooLarge"}
			}
			return asyncDone{text: text}
		}, nil
	})
	method("read", func(scope Scope, a []goja.Value) (func(context.Context) asyncDone, error) {
		id, err := resultID(a)
		if err != nil {
			return nil, err
		}
		o := arg(a, 1)
		r := ReadRange{StartLine: optionInt(o, "start_line"), EndLine: optionInt(o, "end_line"), StartChar: optionInt(o, "start_char")}
		return func(ctx context.Context) asyncDone { return asJSON(store.Read(ctx, scope, id, r)) }, nil
	})
	method("search", func(scope Scope, a []goja.Value) (func(context.Context) asyncDone, error) {
		id, err := resultID(a)
		if err != nil {
			return nil, err
		}
		p := arg(a, 1)
		if !defined(p) || goja.IsNull(p) {
			return nil, errors.New("a pattern is required: results.search(id, pattern, {context_lines})")
		}
		pattern := p.String()
		if isRegExp(p) {
			pattern = p.(*goja.Object).Get("source").String()
		}
		n := optionInt(arg(a, 2), "context_lines")
		return func(ctx context.Context) asyncDone { return asJSON(store.Search(ctx, scope, id, pattern, n)) }, nil
	})
	method("ids", func(scope Scope, a []goja.Value) (func(context.Context) asyncDone, error) {
		limit := optionInt(arg(a, 0), "limit")
		if limit <= 0 {
			limit = 20
		}
		return func(ctx context.Context) asyncDone { return asJSON(store.IDs(ctx, scope, limit)) }, nil
	})
	return o
}

func resultID(a []goja.Value) (string, error) {
	v := arg(a, 0)
	if !defined(v) || goja.IsNull(v) || v.String() == "" {
		return "", errors.New("a result id is required, e.g. \"res_1a2b3c\"")
	}
	return v.String(), nil
}

// optionInt reads one field of an options object as an integer: 0 when v
// is not an object or the field is absent or not a number. Only that field
// is read (its getter runs, as JavaScript would run it): converting the
// whole object to Go copied every value under any key where no limit
// reaches (a sparse array of length 2^32-1 asked for 64 GiB and the process
// died) and ran every getter.
func optionInt(v goja.Value, key string) int {
	o, ok := v.(*goja.Object)
	if !ok {
		return 0
	}
	f := o.Get(key)
	if _, isObj := f.(*goja.Object); isObj || f == nil {
		return 0 // converting an object to a number runs its code
	}
	switch x := f.Export().(type) {
	case int64:
		return int(max(min(x, math.MaxInt32), math.MinInt32))
	case float64:
		if math.IsNaN(x) {
			return 0
		}
		return int(max(min(x, math.MaxInt32), math.MinInt32))
	}
	return 0
}

// preventExtensions is Object.preventExtensions(o), which goja's Go API
// lacks; it runs while the kernel is set up, before code could replace it.
func preventExtensions(rt *goja.Runtime, o *goja.Object) error {
	pe, ok := goja.AssertFunction(rt.GlobalObject().Get("Object").ToObject(rt).Get("preventExtensions"))
	if !ok {
		return errors.New("Object.preventExtensions is not a function")
	}
	_, err := pe(goja.Undefined(), o)
	return err
}
