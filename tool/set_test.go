package tool_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentryhq/agentry/model"
	"github.com/agentryhq/agentry/tool"
)

// rawTool is a hand-written Tool with a raw JSON schema, as an MCP client would provide.
type rawTool struct {
	def  tool.Definition
	call func(ctx context.Context, args json.RawMessage) (string, error)
}

func (r rawTool) Definition() tool.Definition { return r.def }
func (r rawTool) Call(ctx context.Context, args json.RawMessage) (string, error) {
	return r.call(ctx, args)
}

func echoRaw(name, schema string) rawTool {
	return rawTool{
		def:  tool.Definition{Name: name, Description: "echo", Parameters: json.RawMessage(schema)},
		call: func(_ context.Context, args json.RawMessage) (string, error) { return string(args), nil },
	}
}

func mustSet(t testing.TB, tools ...tool.Tool) *tool.Set {
	t.Helper()
	s, err := tool.NewSet(tools)
	if err != nil {
		t.Fatalf("NewSet: %v", err)
	}
	return s
}

func call(name, args string) model.ToolCall {
	return model.ToolCall{ID: "call_1", Name: name, Arguments: args}
}

func TestExecute_RejectsInvalidArgumentsWithActionableMessage(t *testing.T) {
	t.Parallel()
	s := mustSet(t, forecastTool(t), echoRaw("raw", `{"type":"object","properties":{"q":{"type":"string","minLength":2}},"required":["q"]}`),
		echoRaw("draft7", `{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"n":{"type":"integer"}}}`),
		mustFunc(t, tool.FuncConfig{Name: "add", Description: "d"}, func(_ context.Context, in struct{ A, B int }) (int, error) { return in.A + in.B, nil }))
	tests := []struct {
		name, tool, args string
		want             []string
	}{
		{"wrong type", "forecast", `{"location":{"city":"Paris"},"days":"3"}`, []string{"at /days", "got string, want integer"}},
		{"missing required", "forecast", `{"days":3}`, []string{"missing property 'location'"}},
		{"missing nested required", "forecast", `{"location":{},"days":3}`, []string{"at /location", "missing property 'city'"}},
		{"invalid JSON", "forecast", `{"location":`, []string{"not valid JSON", "JSON object"}},
		{"trailing data", "forecast", `{"location":{"city":"P"},"days":3} {}`, []string{"not valid JSON", "after the JSON value"}},
		{"extra field", "forecast", `{"location":{"city":"P"},"days":3,"hours":2}`, []string{"additional properties 'hours' not allowed"}},
		{"enum violation", "forecast", `{"location":{"city":"P"},"days":2}`, []string{"at /days", "1, 3, 7"}},
		{"array instead of object", "forecast", `[1]`, []string{"at the top level", "want object"}},
		{"empty arguments mean {}", "forecast", ``, []string{"missing properties 'location', 'days'"}},
		{"nested array item", "forecast", `{"location":{"city":"P"},"days":1,"stops":[{"city":1}]}`, []string{"at /stops/0/city"}},
		{"integer out of Go range", "add", `{"A":1e30,"B":1}`, []string{"for add", "1e30", "A of type int"}},
		{"all violations listed", "forecast", `{"days":"x","extra":1}`, []string{"missing property 'location'", "at /days", "'extra'"}},
		{"any tool: raw schema", "raw", `{"q":"a"}`, []string{"for raw", "at /q", "minLength"}},
		{"any tool: invalid JSON", "raw", `nope`, []string{"not valid JSON"}},
		{"any tool: draft-07 schema", "draft7", `{"n":"2"}`, []string{"at /n", "want integer"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			res := s.Execute(context.Background(), call(tt.tool, tt.args))
			if !errors.Is(res.Err, tool.ErrInvalidArguments) {
				t.Fatalf("err = %v, want ErrInvalidArguments", res.Err)
			}
			if !res.IsError() || res.Content != res.Err.Error() {
				t.Errorf("result %+v: want error flag and the message as content", res)
			}
			for _, w := range tt.want {
				if !strings.Contains(res.Content, w) {
					t.Errorf("message %q does not mention %q", res.Content, w)
				}
			}
		})
	}
}

func TestExecute_AcceptsValidArguments(t *testing.T) {
	t.Parallel()
	s := mustSet(t,
		forecastTool(t),
		echoRaw("raw", `{"type":"object","properties":{"q":{"type":"string"}}}`),
		echoRaw("noschema", ``),
		echoRaw("draft7", `{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"n":{"type":"integer"}}}`),
		mustFunc(t, tool.FuncConfig{Name: "noargs", Description: "d"}, func(context.Context, struct{}) (string, error) { return "ok", nil }),
	)
	tests := []struct{ name, tool, args, want string }{
		{"func tool", "forecast", `{"location":{"city":"Oslo"},"days":7,"unit":"celsius","fields":["wind"],"note":null}`, `{"city":"Oslo","temp_c":21.5}`},
		{"whitespace around arguments", "forecast", " \n{\"location\":{\"city\":\"Oslo\"},\"days\":1}\n", `{"city":"Oslo","temp_c":21.5}`},
		{"raw schema tool gets arguments verbatim", "raw", `{"q":"x"}`, `{"q":"x"}`},
		{"raw tool without schema gets {} for empty", "noschema", ``, `{}`},
		{"draft-07 schema with $schema", "draft7", `{"n":2}`, `{"n":2}`},
		{"no-argument func with empty string", "noargs", ``, "ok"},
		{"no-argument func with {}", "noargs", `{}`, "ok"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			res := s.Execute(context.Background(), call(tt.tool, tt.args))
			if res.Err != nil {
				t.Fatalf("unexpected error: %v", res.Err)
			}
			if res.Content != tt.want {
				t.Errorf("content = %s, want %s", res.Content, tt.want)
			}
			if res.Duration <= 0 {
				t.Errorf("duration = %v, want > 0", res.Duration)
			}
		})
	}
}

func TestExecute_RequiresObjectWhenToolHasNoSchema(t *testing.T) {
	t.Parallel()
	res := mustSet(t, echoRaw("noschema", ``)).Execute(context.Background(), call("noschema", `"text"`))
	if !errors.Is(res.Err, tool.ErrInvalidArguments) || !strings.Contains(res.Content, "want a JSON object") {
		t.Fatalf("got %v", res.Err)
	}
}

func TestExecute_UnknownToolListsAvailableTools(t *testing.T) {
	t.Parallel()
	s := mustSet(t, forecastTool(t), echoRaw("search", `{"type":"object"}`))
	res := s.Execute(context.Background(), call("forcast", `{}`))
	if !errors.Is(res.Err, tool.ErrUnknownTool) {
		t.Fatalf("err = %v, want ErrUnknownTool", res.Err)
	}
	for _, w := range []string{`"forcast"`, "forecast, search"} {
		if !strings.Contains(res.Content, w) {
			t.Errorf("message %q does not mention %s", res.Content, w)
		}
	}
}

func TestExecute_ReturnsToolErrorAsResult(t *testing.T) {
	t.Parallel()
	boom := errors.New("city not found: try a larger city nearby")
	s := mustSet(t, mustFunc(t, tool.FuncConfig{Name: "f", Description: "d"}, func(context.Context, struct{}) (*forecast, error) {
		return nil, boom
	}))
	res := s.Execute(context.Background(), call("f", `{}`))
	if !errors.Is(res.Err, boom) || res.Content != boom.Error() {
		t.Fatalf("result = %+v", res)
	}
}

func TestExecute_TimesOut(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	tests := []struct {
		name string
		fn   func(ctx context.Context, _ struct{}) (string, error)
	}{
		{"tool honouring its context", func(ctx context.Context, _ struct{}) (string, error) {
			<-ctx.Done()
			return "", ctx.Err()
		}},
		{"tool ignoring its context", func(context.Context, struct{}) (string, error) {
			<-release
			return "late", nil
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := mustSet(t, mustFunc(t, tool.FuncConfig{Name: "slow", Description: "d", Timeout: 20 * time.Millisecond}, tt.fn))
			res := s.Execute(context.Background(), call("slow", `{}`))
			if !errors.Is(res.Err, tool.ErrTimeout) {
				t.Fatalf("err = %v, want ErrTimeout", res.Err)
			}
			if !strings.Contains(res.Content, "slow did not finish within 20ms") {
				t.Errorf("message %q", res.Content)
			}
			if res.Duration > 2*time.Second {
				t.Errorf("took %v, the timeout was not enforced", res.Duration)
			}
		})
	}
}

func TestExecute_CallerCancellationIsNotATimeout(t *testing.T) {
	t.Parallel()
	started := make(chan struct{})
	s := mustSet(t, mustFunc(t, tool.FuncConfig{Name: "wait", Description: "d", Timeout: time.Hour}, func(ctx context.Context, _ struct{}) (string, error) {
		close(started)
		<-ctx.Done()
		return "", ctx.Err()
	}))
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-started; cancel() }()
	res := s.Execute(ctx, call("wait", `{}`))
	if !errors.Is(res.Err, context.Canceled) || errors.Is(res.Err, tool.ErrTimeout) {
		t.Fatalf("err = %v, want context.Canceled and not ErrTimeout", res.Err)
	}
}

func TestExecute_DoesNotRunWhenAlreadyCancelled(t *testing.T) {
	t.Parallel()
	ran := false
	s := mustSet(t, mustFunc(t, tool.FuncConfig{Name: "f", Description: "d"}, func(context.Context, struct{}) (string, error) {
		ran = true
		return "", nil
	}))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res := s.Execute(ctx, call("f", `{}`))
	if !errors.Is(res.Err, context.Canceled) || ran {
		t.Fatalf("err = %v, ran = %v", res.Err, ran)
	}
}

func TestExecute_RecoversPanics(t *testing.T) {
	t.Parallel()
	panicky := func(context.Context, struct{}) (string, error) { panic("index out of range") }
	// An argument type whose own UnmarshalJSON panics: decoding runs user
	// code too.
	badDecode := func(context.Context, struct {
		V panickyValue `json:"v"`
	}) (string, error) {
		return "unreachable", nil
	}
	raw := rawTool{def: tool.Definition{Name: "raw"}, call: func(context.Context, json.RawMessage) (string, error) {
		var m map[string]int
		//lint:ignore SA5000 the panic this write raises is what the test recovers
		m["x"] = 1 // nil map write
		return "", nil
	}}
	tests := []struct {
		name string
		ctx  func() (context.Context, context.CancelFunc)
		tl   tool.Tool
	}{
		{"func tool, background context", func() (context.Context, context.CancelFunc) { return context.Background(), func() {} },
			mustFunc(t, tool.FuncConfig{Name: "p", Description: "d"}, panicky)},
		{"func tool, cancellable context", func() (context.Context, context.CancelFunc) { return context.WithCancel(context.Background()) },
			mustFunc(t, tool.FuncConfig{Name: "p", Description: "d"}, panicky)},
		{"func tool with timeout", func() (context.Context, context.CancelFunc) { return context.Background(), func() {} },
			mustFunc(t, tool.FuncConfig{Name: "p", Description: "d", Timeout: time.Minute}, panicky)},
		{"raw tool runtime error", func() (context.Context, context.CancelFunc) { return context.Background(), func() {} }, raw},
		{"func tool, UnmarshalJSON of an argument", func() (context.Context, context.CancelFunc) { return context.Background(), func() {} },
			mustFunc(t, tool.FuncConfig{Name: "d", Description: "d"}, badDecode)},
		{"func tool with timeout, UnmarshalJSON of an argument", func() (context.Context, context.CancelFunc) { return context.Background(), func() {} },
			mustFunc(t, tool.FuncConfig{Name: "d", Description: "d", Timeout: time.Minute}, badDecode)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := tt.ctx()
			defer cancel()
			name := tt.tl.Definition().Name
			args := `{}`
			if name == "d" {
				args = `{"v": 1}`
			}
			res := mustSet(t, tt.tl).Execute(ctx, call(name, args))
			var pe *tool.PanicError
			if !errors.Is(res.Err, tool.ErrPanicked) || !errors.As(res.Err, &pe) {
				t.Fatalf("err = %v, want a PanicError", res.Err)
			}
			if pe.Tool != name || len(pe.Stack) == 0 || !strings.Contains(res.Content, "panicked") {
				t.Errorf("panic error = %+v, content %q", pe, res.Content)
			}
		})
	}
}

// panickyValue's decoding panics, as a buggy user type's may.
type panickyValue struct{}

func (*panickyValue) UnmarshalJSON([]byte) error { panic("decoder bug") }

func TestNewSet_RejectsInvalidRegistrations(t *testing.T) {
	t.Parallel()
	f := forecastTool(t)
	tests := []struct {
		name  string
		tools []tool.Tool
		kits  []tool.Toolkit
		want  string
	}{
		{"duplicate names", []tool.Tool{f, echoRaw("forecast", `{}`)}, nil, `duplicate tool name "forecast"`},
		{"duplicate across toolkit", []tool.Tool{f}, []tool.Toolkit{{Name: "weather", Tools: []tool.Tool{forecastTool(t)}}}, "duplicate"},
		{"nil tool", []tool.Tool{nil}, nil, "nil tool"},
		{"empty name", []tool.Tool{echoRaw("", `{}`)}, nil, "no name"},
		{"schema not JSON", []tool.Tool{echoRaw("bad", `{`)}, nil, "not valid JSON"},
		{"schema not a schema", []tool.Tool{echoRaw("bad", `{"type":12}`)}, nil, "not a valid JSON Schema"},
		{"remote reference", []tool.Tool{echoRaw("bad", `{"$ref":"file:///etc/passwd"}`)}, nil, "bad"},
		{"toolkit naming a missing tool", nil, []tool.Toolkit{{Name: "weather", Tools: []tool.Tool{f}, Exclude: []string{"nope"}}}, `toolkit weather has no tool "nope"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := tool.NewSet(tt.tools, tt.kits...)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want it to mention %q", err, tt.want)
			}
		})
	}
}

func TestSet_SpecsAndLookupFollowRegistrationOrder(t *testing.T) {
	t.Parallel()
	f := forecastTool(t)
	s, err := tool.NewSet([]tool.Tool{f}, tool.Toolkit{Name: "k", Tools: []tool.Tool{echoRaw("b", `{}`), echoRaw("a", `{}`)}})
	if err != nil {
		t.Fatal(err)
	}
	specs := s.Specs()
	if got := fmt.Sprint(s.Names()); got != "[forecast b a]" || len(specs) != 3 || s.Len() != 3 {
		t.Fatalf("names = %s, specs = %d", got, len(specs))
	}
	if specs[0].Name != "forecast" || specs[0].Description != "weather forecast" || string(specs[0].Parameters) != string(f.Definition().Parameters) {
		t.Errorf("spec = %+v", specs[0])
	}
	if got, ok := s.Lookup("a"); !ok || got.Definition().Name != "a" {
		t.Errorf("Lookup(a) = %v, %v", got, ok)
	}
	if _, ok := s.Lookup("zzz"); ok {
		t.Error("Lookup found a missing tool")
	}
}

func TestSet_WithReturnsNewSetAndKeepsOriginal(t *testing.T) {
	t.Parallel()
	base := mustSet(t, forecastTool(t))
	more, err := base.With([]tool.Tool{echoRaw("search", `{}`)})
	if err != nil {
		t.Fatal(err)
	}
	if base.Len() != 1 || more.Len() != 2 {
		t.Fatalf("base %d tools, more %d tools", base.Len(), more.Len())
	}
	if res := base.Execute(context.Background(), call("search", `{}`)); !errors.Is(res.Err, tool.ErrUnknownTool) {
		t.Errorf("base gained a tool: %v", res.Err)
	}
	if res := more.Execute(context.Background(), call("forecast", `{"location":{"city":"x"},"days":1}`)); res.Err != nil {
		t.Errorf("more lost a tool: %v", res.Err)
	}
	if _, err := more.With([]tool.Tool{forecastTool(t)}); err == nil {
		t.Error("With accepted a duplicate name")
	}
}

func TestResult_MessageIsToolMessage(t *testing.T) {
	t.Parallel()
	s := mustSet(t, forecastTool(t))
	tests := []struct {
		name, args string
		wantArgs   string
		wantErr    bool
	}{
		{"success keeps arguments", `{"location":{"city":"Rome"},"days":1}`, `{"location":{"city":"Rome"},"days":1}`, false},
		{"invalid JSON arguments are dropped", `{"location":`, ``, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m := s.Execute(context.Background(), call("forecast", tt.args)).Message()
			if m.Role != model.RoleTool || m.ToolCallID != "call_1" || m.ToolName != "forecast" || m.ToolCallError != tt.wantErr {
				t.Errorf("message = %+v", m)
			}
			if string(m.ToolArgs) != tt.wantArgs {
				t.Errorf("tool args = %s, want %s", m.ToolArgs, tt.wantArgs)
			}
			if _, err := json.Marshal(m); err != nil {
				t.Errorf("message does not encode: %v", err)
			}
		})
	}
}

func TestExecute_ConcurrentCalls(t *testing.T) {
	t.Parallel()
	s := mustSet(t, forecastTool(t), mustFunc(t, tool.FuncConfig{Name: "add", Description: "d", Timeout: time.Second},
		func(_ context.Context, in struct{ A, B int }) (int, error) { return in.A + in.B, nil }))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	for i := range 64 {
		wg.Go(func() {
			res := s.Execute(ctx, call("add", fmt.Sprintf(`{"A":%d,"B":1}`, i)))
			if res.Err != nil || res.Content != fmt.Sprint(i+1) {
				t.Errorf("add(%d,1) = %q, %v", i, res.Content, res.Err)
			}
			if res := s.Execute(context.Background(), call("forecast", `{"days":"x"}`)); !errors.Is(res.Err, tool.ErrInvalidArguments) {
				t.Errorf("invalid call: %v", res.Err)
			}
			_ = s.Specs()
		})
	}
	wg.Wait()
}
