package codemode

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/internal/clip"
	"github.com/dop251/goja"
	"github.com/dop251/goja/ast"
)

// A snapshot is one JSON document per session in the project's database
// (the files table, agno_fs): the session's JSON-serialisable globals, and
// its functions as source. It names its owner; a snapshot is restored only
// into a run of the same user. The latest snapshot of each user is also
// kept under the user's own path, so a new session of that user starts
// from it.

const snapshotVersion = 1

type snapshotDoc struct {
	Version int        `json:"version"`
	Owner   string     `json:"owner,omitempty"`
	Session string     `json:"session_id"`
	SavedAt int64      `json:"saved_at"`
	Vars    []snapVar  `json:"vars"`
	Skipped []snapSkip `json:"skipped,omitempty"`
	// SkippedMore counts the variables left out past the listed ones.
	SkippedMore int `json:"skipped_more,omitempty"`
}

// noticeNames is how many variables a notice (and a saved state's list of
// variables left out) names; the rest are counted. A session can hold
// thousands of globals, and every name cost the model's context.
const noticeNames = 20

// someOf joins the first noticeNames items with sep, and counts the others
// and more, which were not listed.
func someOf(items []string, sep string, more int) string {
	if len(items) > noticeNames {
		items, more = items[:noticeNames], more+len(items)-noticeNames
	}
	s := strings.Join(items, sep)
	if more > 0 {
		s += fmt.Sprintf("%sand %d more", sep, more)
	}
	return s
}

type snapVar struct {
	Name   string          `json:"name"`
	JSON   json.RawMessage `json:"json,omitempty"`
	Source string          `json:"source,omitempty"`
}

type snapSkip struct {
	Name   string `json:"name"`
	Reason string `json:"reason"`
}

func sessionPath(session string) string { return "sessions/" + session }
func userPath(user string) string       { return "users/" + user }

// errUnreadableSnapshot: a stored snapshot that is not one of this version
// (corrupt bytes, or another format).
var errUnreadableSnapshot = errors.New("codemode: unreadable snapshot")

// noticeUnreadable tells the model why a session's variables are gone.
const noticeUnreadable = "the saved state of this session could not be read (corrupt, or saved by another version): the code environment starts empty"

// loadSnapshot reads the snapshot a new interpreter of session starts from:
// the session's own, else (for a known user) the user's latest. It returns
// ErrForeignSession when the session's snapshot belongs to another user,
// readable or not. A session whose snapshot cannot be read starts empty
// (never from the user's latest, as a new session would), with notice.
func (cm *CodeMode) loadSnapshot(ctx context.Context, session, user string) (doc *snapshotDoc, from, notice string, err error) {
	if !cm.cfg.Persist {
		return nil, "", "", nil
	}
	doc, err = cm.readDoc(ctx, sessionPath(session))
	unreadable := errors.Is(err, errUnreadableSnapshot)
	if err != nil && !unreadable {
		return nil, "", "", err
	}
	if doc != nil {
		if unreadable {
			// Nothing of it is restored, so only an owner it names can keep
			// others out; one that names none (or whose owner cannot be
			// read) is replaced by the next save of whoever runs.
			if doc.Owner != "" && doc.Owner != user {
				return nil, "", "", ErrForeignSession
			}
			return nil, "", noticeUnreadable, nil
		}
		if !mayUse(doc.Owner, user) {
			return nil, "", "", ErrForeignSession
		}
		return doc, "from the saved state of this session", "", nil
	}
	if user == "" {
		return nil, "", "", nil
	}
	doc, err = cm.readDoc(ctx, userPath(user))
	if errors.Is(err, errUnreadableSnapshot) {
		return nil, "", "", nil
	}
	if err != nil || doc == nil || doc.Owner != user {
		return nil, "", "", err
	}
	return doc, "from the saved state of your latest session", "", nil
}

// readDoc reads the snapshot at path: nil when there is none. One that
// cannot be read is logged and returned as a doc holding only the owner it
// names (when that much can be read), with errUnreadableSnapshot.
func (cm *CodeMode) readDoc(ctx context.Context, path string) (*snapshotDoc, error) {
	f, err := cm.cfg.DB.GetFile(ctx, cm.cfg.Namespace, path)
	if errors.Is(err, db.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("codemode: reading the saved state: %w", err)
	}
	doc, err := decodeSnapshot(f.Content)
	if err != nil {
		cm.cfg.Logger.Warn("codemode: ignoring an unreadable snapshot; the session starts empty",
			"namespace", cm.cfg.Namespace, "path", path, "owner", doc.Owner, "err", err)
		return doc, errUnreadableSnapshot
	}
	return doc, nil
}

// decodeSnapshot decodes a stored snapshot. One that is not of this version
// (or not a snapshot at all) is an error, with a doc holding only the owner
// it names, when that much can be read.
func decodeSnapshot(b []byte) (*snapshotDoc, error) {
	var doc snapshotDoc
	err := json.Unmarshal(b, &doc)
	if err == nil && doc.Version != snapshotVersion {
		err = fmt.Errorf("version %d, not %d", doc.Version, snapshotVersion)
	}
	if err != nil {
		return &snapshotDoc{Owner: snapshotOwner(b)}, err
	}
	return &doc, nil
}

// snapshotOwner reads the owner member of a stored snapshot that does not
// decode (its other members of the wrong type, or the text cut short after
// the owner): "" when there is none to read. It matches the member as
// json.Unmarshal does (the key in any case, the last one that is a string
// winning, null changing nothing), so it names the owner a decode of the
// same bytes would; an owner of another type is passed over.
func snapshotOwner(b []byte) string {
	dec := json.NewDecoder(bytes.NewReader(b))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return ""
	}
	owner := ""
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return owner
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return owner
		}
		if k, _ := key.(string); strings.EqualFold(k, "owner") {
			var s *string
			if json.Unmarshal(v, &s) == nil && s != nil {
				owner = *s
			}
		}
	}
	return owner
}

// saveSnapshot stamps doc with the time and writes it for the session (and
// as its owner's latest) unless it holds what was saved last. The time is
// left out of that comparison: a state that did not change is not written
// again because a second has passed.
func (cm *CodeMode) saveSnapshot(ctx context.Context, k *kernel, doc *snapshotDoc) error {
	k.saveMu.Lock()
	defer k.saveMu.Unlock()
	if k.noSave {
		return nil // restarted or forgotten since the cell began
	}
	doc.SavedAt = 0
	b, err := doc.marshal()
	if err != nil {
		return err
	}
	sum := sha256.Sum256(b)
	if sum == k.lastSaved {
		return nil
	}
	doc.SavedAt = time.Now().Unix()
	if b, err = doc.marshal(); err != nil {
		return err
	}
	ctx = context.WithoutCancel(ctx)
	if _, err := cm.cfg.DB.PutFile(ctx, &db.File{Namespace: cm.cfg.Namespace, Path: sessionPath(k.session), Content: b}); err != nil {
		return err
	}
	if k.owner != "" {
		if _, err := cm.cfg.DB.PutFile(ctx, &db.File{Namespace: cm.cfg.Namespace, Path: userPath(k.owner), Content: b}); err != nil {
			return err
		}
	}
	k.lastSaved = sum
	return nil
}

// capture builds the snapshot of k's globals; it runs JavaScript (getters,
// toJSON), so it runs on the cell's budget. It also reports the variables
// newly left out, for the model.
// captureLimited is capture run as a cell of its own: reading the
// variables runs their toJSON methods and getters, which get the limits of
// a cell (memory and the timeout, besides CPU time), are interrupted by a
// restart, and cannot call tools. Without a cell's limits a toJSON grew the
// heap by 379 MiB past a 16 MiB limit after every successful cell; and a
// tool it called ran outside any cell, once more at every save, its result
// thrown away.
func (k *kernel) captureLimited(ctx context.Context, user string) (*snapshotDoc, string, error) {
	c, end := k.begin(ctx, user)
	c.saving = true
	doc, notice, err := k.capture()
	end()
	var ab *abortError
	if errors.As(err, &ab) && ab.reason != ReasonInternal {
		err = fmt.Errorf("reading the variables (their toJSON methods and getters run) was stopped: %s", k.abortMessage(ab.reason, ab.detail))
	}
	return doc, notice, err
}

func (k *kernel) capture() (*snapshotDoc, string, error) {
	cfg := &k.cm.cfg
	doc := snapshotDoc{Version: snapshotVersion, Owner: k.owner, Session: k.session, Vars: []snapVar{}}
	_, err := k.vm(func() (goja.Value, error) {
		g := k.rt.GlobalObject()
		total := 0
		skip := func(name, reason string) {
			if len(doc.Skipped) == noticeNames {
				doc.SkippedMore++
				return
			}
			doc.Skipped = append(doc.Skipped, snapSkip{shortName(name), reason})
		}
		for _, name := range g.Keys() {
			if strings.HasPrefix(name, "__cm_") {
				continue
			}
			if len(name) > cfg.MaxVariableBytes {
				skip(name, fmt.Sprintf("over the %d-byte limit for one variable", cfg.MaxVariableBytes))
				continue
			}
			if !isIdentifier(name) {
				skip(name, "not a name code can declare (ASCII letters, digits, _ and $), so it could not be restored")
				continue
			}
			if k.isHandle(name) {
				skip(name, "the name of a tool: a restore keeps the tool's function")
				continue
			}
			var sv snapVar
			var reason string
			// A getter or toJSON that throws leaves this variable out, not
			// the others (Try unwinds goja's stacks for the next one).
			if ex := k.rt.Try(func() { sv, reason = k.captureVar(name) }); ex != nil {
				sv, reason = snapVar{}, "reading it threw an exception"
				k.rt.Try(func() {
					msg, _ := clip.Bytes(ex.Value().String(), 200)
					reason += " (" + msg + ")"
				})
			}
			if reason != "" {
				skip(name, reason)
				continue
			}
			if sv.Name == "" {
				continue
			}
			size := len(sv.Name) + len(sv.JSON) + len(sv.Source)
			if total+size > cfg.MaxSnapshotBytes {
				skip(name, fmt.Sprintf("the saved state is limited to %d bytes", cfg.MaxSnapshotBytes))
				continue
			}
			total += size
			doc.Vars = append(doc.Vars, sv)
		}
		return nil, nil
	})
	if err != nil {
		return nil, "", err
	}
	var notice string
	if len(doc.Skipped) > 0 {
		parts := make([]string, len(doc.Skipped))
		for i, s := range doc.Skipped {
			parts[i] = s.Name + " (" + s.Reason + ")"
		}
		list := someOf(parts, "; ", doc.SkippedMore)
		if list != k.lastSkipped {
			notice = "not saved with the session's state: " + list
		}
		k.lastSkipped = list
	} else {
		k.lastSkipped = ""
	}
	return &doc, notice, nil
}

// captureVar reads the global name for a snapshot: the variable to save
// (none, with no reason, for undefined and values JSON leaves out), or why
// it is left out. Exceptions thrown by its getter or toJSON are panics.
func (k *kernel) captureVar(name string) (snapVar, string) {
	cfg := &k.cm.cfg
	v := k.rt.GlobalObject().Get(name)
	if v == nil || goja.IsUndefined(v) {
		return snapVar{}, ""
	}
	if o, ok := v.(*goja.Object); ok {
		if _, isFn := goja.AssertFunction(o); isFn {
			src := declaredSource(call(k.sb.fnToString, o).String())
			if strings.Contains(src, "[native code]") {
				return snapVar{}, "a built-in or bound function has no source to save"
			}
			return snapVar{Name: name, Source: src}, ""
		}
		if cls := brand(o); slices.Contains([]string{"Map", "Set", "WeakMap", "WeakSet", "Promise"}, cls) {
			return snapVar{}, "a " + cls + " is not JSON-serialisable (convert it, e.g. Object.fromEntries(map) or [...set])"
		}
	} else if _, isSym := v.(*goja.Symbol); isSym {
		return snapVar{}, "a symbol is not JSON-serialisable"
	}
	e := &encoder{rt: k.rt, limit: cfg.MaxVariableBytes, maxArray: k.cm.lim.maxArray}
	out, ok, err := e.encode(v)
	switch {
	case errors.Is(err, errTooLarge):
		return snapVar{}, fmt.Sprintf("over the %d-byte limit for one variable", cfg.MaxVariableBytes)
	case err != nil:
		return snapVar{}, "not JSON-serialisable (" + err.Error() + ")"
	case !ok:
		return snapVar{}, ""
	}
	return snapVar{Name: name, JSON: json.RawMessage(out)}, ""
}

// restore applies the snapshot k starts from (pending) before its first
// cell, on limits of its own, so that the cell's code gets its whole budget.
// Evaluating a function's or class's saved source runs code (a class's
// static blocks, computed keys and extends clause): all of it shares one CPU
// budget, and the memory limit and the cell timeout apply to the whole
// restore. A snapshot over them is refused: the runtime is rebuilt empty and
// the notice says why (the next save replaces that state). JSON values run
// no code and are bounded by their size; each is parsed on a budget of its
// own, not charged to the code.
//
// A run cancelled (or a session restarted) meanwhile is not a refusal:
// stop is its reason, the state stays pending for the next cell and the
// cell must not run (its save would write an empty state over the one not
// yet restored).
func (k *kernel) restore(ctx context.Context, user string) (notice, stop string) {
	doc, from := k.pending, k.pendingFrom
	k.restored = true
	if doc == nil {
		return "", ""
	}
	c, end := k.begin(ctx, user)
	c.restoring = true
	notice = k.apply(doc, from)
	end()
	reason := c.aborted()
	if reason == "" && !k.broken {
		k.pending = nil
		return notice, ""
	}
	// An interrupted runtime can keep frames of the aborted call (see
	// CodeMode.rebuild): start from a new one.
	k.broken = false
	if err := k.start(); err != nil {
		k.broken = true
		return "", ReasonInternal
	}
	if reason == ReasonCancelled || reason == ReasonRestart {
		k.restored = false
		return "", reason
	}
	k.pending = nil
	cfg := &k.cm.cfg
	why := "the interpreter failed restoring them"
	switch reason {
	case ReasonCPUTime:
		why = fmt.Sprintf("restoring them ran JavaScript for more than %v (the CPU time limit; a class's static blocks run when it is restored)", cfg.CPUTimeLimit)
	case ReasonMemory:
		why = fmt.Sprintf("restoring them grew the heap by more than %d MiB (the memory limit)", cfg.MemoryLimit>>20)
	case ReasonCallDepth:
		why = fmt.Sprintf("restoring them nested calls deeper than %d (the call depth limit)", cfg.MaxCallDepth)
	case ReasonTimeout:
		why = fmt.Sprintf("restoring them took more than %v (the cell timeout)", cfg.CellTimeout)
	}
	return fmt.Sprintf("the variables %s were not restored: %s; the code environment starts empty", from, why), ""
}

// apply restores a snapshot into k's runtime on the running cellRun; it
// returns a notice for the model. It stops at the first abort.
func (k *kernel) apply(doc *snapshotDoc, from string) string {
	var restored, failed []string
	c := k.cell
	g := k.rt.GlobalObject()
	var spent time.Duration // CPU of the saved code run so far
	cfg := &k.cm.cfg
	total := 0
	for _, v := range doc.Vars {
		size := len(v.Name) + len(v.JSON) + len(v.Source)
		name := shortName(v.Name)
		switch {
		case size > cfg.MaxVariableBytes:
			// A save keeps to the limits: a state over them was written
			// otherwise, and what bounds the work of a restore is its size.
			failed = append(failed, fmt.Sprintf("%s (over the %d-byte limit for one variable)", name, cfg.MaxVariableBytes))
			continue
		case total+size > cfg.MaxSnapshotBytes:
			failed = append(failed, fmt.Sprintf("%s (the saved state is limited to %d bytes)", name, cfg.MaxSnapshotBytes))
			continue
		case !isIdentifier(v.Name) || strings.HasPrefix(v.Name, "__cm_"):
			failed = append(failed, name+" (not a name code may declare)")
			continue
		case reservedNames[v.Name]:
			failed = append(failed, name+" (the name of a built-in of the environment)")
			continue
		case k.isHandle(v.Name):
			failed = append(failed, v.Name+" (the name of a tool: "+v.Name+" stays the tool's function)")
			continue
		}
		total += size
		if v.Source != "" {
			c.setCPU(spent)
		} else {
			c.setCPU(0)
		}
		_, err := k.vm(func() (goja.Value, error) {
			var val goja.Value
			if v.Source != "" {
				progName, src, pos := savedSource(v.Name, v.Source)
				k.positions.add(progName, pos)
				prog, err := parse(progName, src)
				if err != nil {
					return nil, err
				}
				if !savedFunction(prog) {
					return nil, errors.New("the saved source is not one function or class")
				}
				if err := checkLiterals(prog, prog.File, ""); err != nil {
					return nil, err
				}
				fixArrowSources(prog, src)
				checkObjectCopies(prog)
				compiled, err := goja.CompileAST(prog, false)
				if err != nil {
					return nil, err
				}
				if val, err = k.rt.RunProgram(compiled); err != nil {
					return nil, err
				}
			} else {
				if err := k.sb.checkJSONText(string(v.JSON)); err != nil {
					return nil, err
				}
				var err error
				if val, err = k.sb.parseJSON(goja.Undefined(), k.rt.ToValue(string(v.JSON))); err != nil {
					return nil, err
				}
			}
			// Defined, not assigned: a setter that restored code put on
			// the global object does not run.
			return nil, g.DefineDataProperty(v.Name, val, goja.FLAG_TRUE, goja.FLAG_TRUE, goja.FLAG_TRUE)
		})
		why := ""
		if err != nil && c.aborted() == "" {
			why = k.restoreError(err) // on the same budget: it may run code
		}
		if v.Source != "" {
			spent = c.cpu()
		}
		if c.aborted() != "" {
			break
		}
		if err != nil {
			failed = append(failed, name+" ("+why+")")
			continue
		}
		restored = append(restored, name)
	}
	var n []string
	if len(restored) > 0 {
		n = append(n, fmt.Sprintf("restored %d variable(s) %s: %s", len(restored), from, someOf(restored, ", ", 0)))
	}
	if len(failed) > 0 {
		n = append(n, "could not restore: "+someOf(failed, "; ", 0))
	}
	return strings.Join(n, "; ")
}

// shortName is a variable's name as notices give it: a global's name can
// be of any length.
func shortName(name string) string { return clip.Mark(name, 100, "…") }

// savedFunction reports whether prog, a saved source in the wrapper of
// savedSource, is one function or class and nothing else: a source that
// closes the wrapper could add code of its own around it.
func savedFunction(prog *ast.Program) bool {
	br, ok := soleExpression(prog).(*ast.BracketExpression)
	if !ok {
		return false
	}
	obj, ok := br.Left.(*ast.ObjectLiteral)
	if !ok || len(obj.Value) != 1 {
		return false
	}
	p, ok := obj.Value[0].(*ast.PropertyKeyed)
	if !ok {
		return false
	}
	switch p.Value.(type) {
	case *ast.FunctionLiteral, *ast.ArrowFunctionLiteral, *ast.ClassLiteral:
		return true
	}
	return false
}

// isHandle reports whether name is the global of a tool's handle, which a
// saved variable never replaces.
func (k *kernel) isHandle(name string) bool {
	for i := range k.cm.handles {
		if js := k.cm.handles[i].js; js != "" && js == name {
			return true
		}
	}
	return false
}

// restoreError says briefly why a saved variable failed to restore. A
// thrown value is read by describe, under the limits: reading it may run
// code (a getter, toString).
func (k *kernel) restoreError(err error) string {
	var msg string
	var ex *goja.Exception
	if errors.As(err, &ex) {
		// Not ex.Error(): it runs the value's toString outside the limits.
		e := k.describe(ex.Value())
		msg = e.Message
		if e.Name != "" {
			msg = e.Name + ": " + msg
		}
	} else {
		msg = err.Error()
	}
	msg, _ = clip.Bytes(msg, 200)
	return msg
}

// stopSaving makes k's later saves no-ops, once a save under way (begun
// before k was restarted or forgotten) has ended: what it saved is then
// replaced or deleted by the caller, not written over afterwards.
func (k *kernel) stopSaving() {
	k.saveMu.Lock()
	k.noSave = true
	k.saveMu.Unlock()
}

func (d *snapshotDoc) marshal() ([]byte, error) { return json.Marshal(d) }
