package codemode_test

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/agentryhq/agentry/codemode"
	"github.com/agentryhq/agentry/model"
	"github.com/agentryhq/agentry/tool"
)

func TestHandles_ParallelCallsRunConcurrently(t *testing.T) {
	t.Parallel()
	tools, peak := testTools(t)
	cm := newCM(t, codemode.Config{Tools: tools})
	c := runCell(t, cm, "s", `const ws = await Promise.all(["Paris", "Rome", "Oslo"].map(city => get_weather({city})))
ws.map(w => w.temp_c)`)
	if got := jsonText(resultOf(t, c)); got != "[21.5,25,9]" {
		t.Fatalf("result %s", got)
	}
	if peak.Load() < 2 {
		t.Errorf("at most %d calls ran at once, want the three to overlap", peak.Load())
	}
}

func TestHandles_ParallelismIsCapped(t *testing.T) {
	t.Parallel()
	tools, peak := testTools(t)
	cm := newCM(t, codemode.Config{Tools: tools, MaxParallelCalls: 2})
	c := runCell(t, cm, "s", `(await Promise.all(Array.from({length: 8}, () => get_weather({city: "Oslo"})))).length`)
	if jsonText(resultOf(t, c)) != "8" {
		t.Fatalf("cell %+v", c)
	}
	if p := peak.Load(); p > 2 {
		t.Errorf("%d calls ran at once, want at most 2", p)
	}
}

// TestHandles_ValidationErrorIsTheToolSetError checks that a call from code
// fails with exactly the text a model's call with the same arguments gets.
func TestHandles_ValidationErrorIsTheToolSetError(t *testing.T) {
	t.Parallel()
	tools, _ := testTools(t)
	set, err := tool.NewSet(tools)
	if err != nil {
		t.Fatal(err)
	}
	cm := newCM(t, codemode.Config{Tools: tools})
	tests := []struct{ code, args string }{
		{`await get_weather({city: 5})`, `{"city":5}`},
		{`await get_weather({})`, `{}`},
		{`await get_weather({city: "Paris", extra: true})`, `{"city":"Paris","extra":true}`},
		{`await compare({a: "x", b: 1})`, `{"a":"x","b":1}`},
	}
	for _, tt := range tests {
		name := strings.SplitN(strings.TrimPrefix(tt.code, "await "), "(", 2)[0]
		want := set.Execute(context.Background(), model.ToolCall{Name: name, Arguments: tt.args})
		if !errors.Is(want.Err, tool.ErrInvalidArguments) {
			t.Fatalf("%s: the tool set accepted %s", tt.code, tt.args)
		}
		c := runCell(t, cm, "s", tt.code)
		if c.Status != codemode.StatusError || c.Error.Message != want.Content || c.Error.Name != "ToolError" {
			t.Errorf("%s: error %+v, want ToolError %q", tt.code, c.Error, want.Content)
		}
	}
	// A caught failure is an ordinary exception.
	c := runCell(t, cm, "s", `let caught; try { await get_weather({city: "Atlantis"}) } catch (e) { caught = e.name + ": " + e.message }; caught`)
	if got := resultOf(t, c); got != "ToolError: no weather for Atlantis" {
		t.Errorf("caught error = %v", got)
	}
}

func TestHandles_RefuseWhatCannotRunInCode(t *testing.T) {
	t.Parallel()
	cm := newCM(t, codemode.Config{MaxToolCalls: 3})
	tests := []struct {
		name, code, want string
	}{
		{"tool needing confirmation", `await delete_all()`, "delete_all needs a human's confirmation, which pauses the run; code cannot pause"},
		{"positional arguments", `await get_weather("Paris")`, `get_weather takes one object of parameters`},
		{"two arguments", `await get_weather({city: "Paris"}, 2)`, `get_weather takes one object of parameters`},
		{"array argument", `await echo(["x"])`, `echo takes one object of parameters`},
		{"circular parameters", `const o = {}; o.o = o; await echo(o)`, `cannot be sent as JSON`},
		{"too many calls", `await Promise.all([1,2,3,4].map(i => echo({text: "" + i})))`, "a cell may call tools at most 3 times"},
		{"results without offloading", `await results.get("res_1")`, "offloading is not enabled"},
	}
	for _, tt := range tests {
		c := runCell(t, cm, "s", tt.code)
		if c.Status != codemode.StatusError || !strings.Contains(c.Error.Message, tt.want) {
			t.Errorf("%s: cell %s, want an error containing %q", tt.name, c.JSON(), tt.want)
		}
	}
	if c := runCell(t, cm, "s", `await echo({text: "fine"})`); resultOf(t, c) != "fine" {
		t.Fatalf("after refusals: %s", c.JSON())
	}
}

func TestHandles_ToolsObjectAndNonIdentifierNames(t *testing.T) {
	t.Parallel()
	dash := tool.MustFunc(tool.FuncConfig{Name: "get-forecast", Description: "d"}, func(context.Context, struct{}) (string, error) { return "sunny", nil })
	digit := tool.MustFunc(tool.FuncConfig{Name: "3d", Description: "d"}, func(context.Context, struct{}) (string, error) { return "cube", nil })
	cm := newCM(t, codemode.Config{Tools: []tool.Tool{dash, digit}})
	c := runCell(t, cm, "s", `[await get_forecast(), await tools["get-forecast"](), await tools["3d"](), typeof tools.get_forecast]`)
	if got := jsonText(resultOf(t, c)); got != `["sunny","sunny","cube","undefined"]` {
		t.Fatalf("result %s", got)
	}
}

func TestHandles_ACellThatNeverAwaitsItsToolStillFinishesIt(t *testing.T) {
	t.Parallel()
	cm := newCM(t, codemode.Config{})
	c := runCell(t, cm, "s", `get_weather({city: "Rome"}).then(w => console.log("late", w.temp_c)); "returned"`)
	if resultOf(t, c) != "returned" || c.Stdout != "late 25\n" {
		t.Fatalf("cell %s", c.JSON())
	}
	c = runCell(t, cm, "s", `get_weather({city: "Atlantis"}); 1`)
	if c.Status != codemode.StatusError || !strings.Contains(c.Error.Message, "unhandled promise rejection: no weather for Atlantis") {
		t.Fatalf("unawaited failing call: %s", c.JSON())
	}
	c = runCell(t, cm, "s", `await new Promise(() => {})`)
	if c.Status != codemode.StatusError || !strings.Contains(c.Error.Message, "nothing will settle") {
		t.Fatalf("promise that never settles: %s", c.JSON())
	}
}

// memResults is a real in-memory Results store: results are kept as text
// per session; reads page by line, search by regular expression.
type memResults struct {
	mu   sync.Mutex
	docs map[string]map[string]storedResult // session -> id -> result
}

type storedResult struct {
	tool, text string
	seq        int
}

func (m *memResults) put(session, id, toolName, text string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.docs == nil {
		m.docs = map[string]map[string]storedResult{}
	}
	if m.docs[session] == nil {
		m.docs[session] = map[string]storedResult{}
	}
	m.docs[session][id] = storedResult{toolName, text, len(m.docs[session])}
}

func (m *memResults) doc(sc codemode.Scope, id string) (storedResult, error) {
	session := sc.SessionID
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.docs[session][id]
	if !ok {
		return storedResult{}, fmt.Errorf("no stored result %s in this session", id)
	}
	return r, nil
}

func (m *memResults) Get(_ context.Context, sc codemode.Scope, id string) (string, error) {
	r, err := m.doc(sc, id)
	return r.text, err
}

func (m *memResults) Read(_ context.Context, sc codemode.Scope, id string, rg codemode.ReadRange) (codemode.ResultPage, error) {
	r, err := m.doc(sc, id)
	if err != nil {
		return codemode.ResultPage{}, err
	}
	lines := strings.Split(r.text, "\n")
	start := max(rg.StartLine, 1)
	end := rg.EndLine
	if end == 0 || end > len(lines) {
		end = len(lines)
	}
	if start > end {
		return codemode.ResultPage{}, fmt.Errorf("start_line %d is past the last line %d", start, len(lines))
	}
	p := codemode.ResultPage{Text: strings.Join(lines[start-1:end], "\n"), StartLine: start, EndLine: end, LineCount: len(lines)}
	if end < len(lines) {
		p.NextStartLine = end + 1
	}
	return p, nil
}

func (m *memResults) Search(_ context.Context, sc codemode.Scope, id, pattern string, contextLines int) ([]codemode.ResultMatch, error) {
	r, err := m.doc(sc, id)
	if err != nil {
		return nil, err
	}
	re, err := regexp.Compile(pattern)
	if err != nil {
		return nil, fmt.Errorf("bad pattern: %v", err)
	}
	lines := strings.Split(r.text, "\n")
	var out []codemode.ResultMatch
	for i, l := range lines {
		if loc := re.FindStringIndex(l); loc != nil {
			m := codemode.ResultMatch{LineNumber: i + 1, Line: l, CharOffset: loc[0]}
			m.Before = lines[max(0, i-contextLines):i]
			m.After = lines[i+1 : min(len(lines), i+1+contextLines)]
			out = append(out, m)
		}
	}
	return out, nil
}

func (m *memResults) IDs(_ context.Context, sc codemode.Scope, limit int) ([]codemode.ResultInfo, error) {
	session := sc.SessionID
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []codemode.ResultInfo
	for id, r := range m.docs[session] {
		out = append(out, codemode.ResultInfo{ResultID: id, ToolName: r.tool, LineCount: strings.Count(r.text, "\n") + 1, SizeBytes: int64(len(r.text))})
	}
	sort.Slice(out, func(i, j int) bool {
		return m.docs[session][out[i].ResultID].seq > m.docs[session][out[j].ResultID].seq
	})
	return out[:min(limit, len(out))], nil
}

var _ codemode.Results = (*memResults)(nil)

func TestResults_HandleReadsTheSessionsStoredResults(t *testing.T) {
	t.Parallel()
	store := &memResults{}
	var log strings.Builder
	for i := range 50 {
		fmt.Fprintf(&log, "line %d: %s\n", i+1, map[bool]string{true: "ERROR disk", false: "ok"}[i%10 == 9])
	}
	store.put("s", "res_a", "read_log", strings.TrimSuffix(log.String(), "\n"))
	store.put("s", "res_b", "search", "short")
	store.put("other", "res_x", "secret", "not yours")
	cm := newCM(t, codemode.Config{Results: store})
	run := func(code string) codemode.Cell {
		c, err := cm.Run(context.Background(), "s", "", code)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	tests := []struct{ code, want string }{
		{`(await results.get("res_a")).split("\n").length`, "50"},
		{`const p = await results.read("res_a", {start_line: 9, end_line: 10}); [p.text, p.line_count, p.next_start_line]`, `["line 9: ok\nline 10: ERROR disk",50,11]`},
		{`(await results.search("res_a", "ERROR", {context_lines: 1})).map(m => [m.line_number, m.before.length])`, `[[10,1],[20,1],[30,1],[40,1],[50,1]]`},
		{`(await results.search("res_a", /ERROR d.sk/)).length`, "5"},
		{`(await results.ids()).map(r => r.result_id)`, `["res_b","res_a"]`},
		{`(await results.ids({limit: 1})).length`, "1"},
	}
	for _, tt := range tests {
		if got := jsonText(resultOf(t, run(tt.code))); got != tt.want {
			t.Errorf("%s = %s, want %s", tt.code, got, tt.want)
		}
	}
	c := run(`await results.get("res_x")`)
	if c.Status != codemode.StatusError || !strings.Contains(c.Error.Message, "no stored result res_x") {
		t.Errorf("another session's result: %s", c.JSON())
	}
	c = run(`await results.read()`)
	if c.Status != codemode.StatusError || !strings.Contains(c.Error.Message, "a result id is required") {
		t.Errorf("missing id: %s", c.JSON())
	}
}

// TestResults_OptionsAreReadFieldByField: the results methods' options
// objects were converted whole to Go values to read one or two numbers:
// every getter of the object ran, and a large or deeply nested value under
// any key was copied in Go, where no limit reaches (a sparse array of length
// 2^32-1 asked for 64 GiB). Only the named fields are read, as numbers.
func TestResults_OptionsAreReadFieldByField(t *testing.T) {
	t.Parallel()
	store := &memResults{}
	store.put("s", "res_a", "read_log", "one\ntwo\nthree")
	cm := newCM(t, codemode.Config{Results: store})
	c := runCell(t, cm, "s", `let touched = 0
const huge = []; huge.length = 2 ** 32 - 1
const p = await results.read("res_a", {start_line: 2, end_line: 2, huge, get other() { touched++; return 1 }})
const q = await results.read("res_a", {start_line: {valueOf() { touched++; return 3 }}})
const ids = await results.ids({limit: Infinity, huge})
;[p.text, q.text, ids.length, touched]`)
	if got := jsonText(resultOf(t, c)); got != `["two","one\ntwo\nthree",1,0]` {
		t.Errorf("reading with options: %s", got)
	}
}
