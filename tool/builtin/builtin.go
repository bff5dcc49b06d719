package builtin

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/agentryhq/agentry/tool"
)

// ErrUnknown is returned for a tool name with no built-in.
var ErrUnknown = errors.New("builtin: unknown tool")

// entry is one name of the registry.
type entry struct {
	check func(name string, opts map[string]any) error
	build func(name string, opts map[string]any) ([]tool.Tool, error)
}

// register ties an options type to its toolkit. prepare checks and completes
// decoded options without side effects; make builds the toolkit. When pure,
// make has no side effects either, so Check runs it too.
func register[O any](pure bool, prepare func(name string, o *O) error, make func(o O) (tool.Toolkit, error)) entry {
	load := func(name string, opts map[string]any) (O, error) {
		var o O
		if err := decode(name, opts, &o); err != nil {
			return o, err
		}
		if prepare != nil {
			if err := prepare(name, &o); err != nil {
				return o, err
			}
		}
		return o, nil
	}
	build := func(name string, opts map[string]any) ([]tool.Tool, error) {
		o, err := load(name, opts)
		if err != nil {
			return nil, err
		}
		kit, err := make(o)
		if err != nil {
			return nil, fmt.Errorf("tool %s: %w", name, err)
		}
		if s, ok := any(&o).(interface{ chosen() selection }); ok {
			kit.Include, kit.Exclude = s.chosen().IncludeTools, s.chosen().ExcludeTools
		}
		tools, err := kit.Selected()
		if err != nil {
			return nil, fmt.Errorf("tool %s: %w (include_tools/exclude_tools name the toolkit's tools)", name, err)
		}
		return tools, nil
	}
	check := func(name string, opts map[string]any) error {
		if pure {
			_, err := build(name, opts)
			return err
		}
		_, err := load(name, opts)
		return err
	}
	return entry{check: check, build: build}
}

func (s selection) chosen() selection { return s }

func single(make func() (tool.Tool, error)) entry {
	return register(true, nil, func(struct{}) (tool.Toolkit, error) {
		t, err := make()
		return tool.Toolkit{Tools: []tool.Tool{t}}, err
	})
}

var registry = map[string]entry{
	"current_time": single(currentTime),
	"calculator":   single(calculator),
	"web_search":   webSearch,
	"web_fetch":    webFetch,
	"sql":          sqlTools,
	"files":        fileTools,
	"shell":        shellTools,
	"http_request": httpRequest,
}

// Names lists the built-in tool and toolkit names, sorted.
func Names() []string {
	out := make([]string, 0, len(registry))
	for n := range registry {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Has reports whether name is a built-in tool or toolkit.
func Has(name string) bool {
	_, ok := registry[name]
	return ok
}

// agnoNames are Agno's tool and toolkit names, answered with Agentry's.
var agnoNames = map[string]string{
	"duckduckgo_search": "web_search", "duckduckgo": "web_search", "websearch": "web_search",
	"sql_tools": "sql", "file_tools": "files", "shell_tools": "shell", "api_tools": "http_request",
	"run_sql_query": "sql", "run_shell_command": "shell", "make_request": "http_request",
}

func unknown(name string) error {
	if to, ok := agnoNames[name]; ok {
		return fmt.Errorf("%w %q: in Agno 3.0 and Agentry the toolkit is %q", ErrUnknown, name, to)
	}
	return fmt.Errorf("%w %q (built-in tools: %s)", ErrUnknown, name, strings.Join(Names(), ", "))
}

// Check decodes and validates the options of name without opening files,
// databases or connections: what a config loader runs at start.
func Check(name string, opts map[string]any) error {
	e, ok := registry[name]
	if !ok {
		return unknown(name)
	}
	return e.check(name, opts)
}

// New builds the tools of name with its options (nil: the defaults).
// Toolkits that hold resources (sql connections, the files root) keep them
// for the life of the process.
func New(name string, opts map[string]any) ([]tool.Tool, error) {
	e, ok := registry[name]
	if !ok {
		return nil, unknown(name)
	}
	return e.build(name, opts)
}

type timeIn struct {
	Timezone string `json:"timezone,omitempty" jsonschema:"IANA time zone such as Europe/Paris; default UTC"`
}

func currentTime() (tool.Tool, error) {
	return tool.Func(tool.FuncConfig{Name: "current_time", Description: "Returns the current date and time (RFC 3339)."},
		func(_ context.Context, in timeIn) (string, error) {
			loc := time.UTC
			if in.Timezone != "" {
				l, err := time.LoadLocation(in.Timezone)
				if err != nil {
					return "", fmt.Errorf("unknown timezone %q: use an IANA name such as Europe/Paris", in.Timezone)
				}
				loc = l
			}
			return time.Now().In(loc).Format(time.RFC3339), nil
		})
}

type calcIn struct {
	A  float64 `json:"a" jsonschema:"first operand"`
	B  float64 `json:"b" jsonschema:"second operand"`
	Op string  `json:"op" jsonschema:"one of add, subtract, multiply, divide, power"`
}

var ops = []string{"add", "subtract", "multiply", "divide", "power"}

func calculator() (tool.Tool, error) {
	return tool.Func(tool.FuncConfig{Name: "calculator", Description: "Applies an arithmetic operation to two numbers."},
		func(_ context.Context, in calcIn) (float64, error) {
			var r float64
			switch in.Op {
			case "add":
				r = in.A + in.B
			case "subtract":
				r = in.A - in.B
			case "multiply":
				r = in.A * in.B
			case "divide":
				if in.B == 0 {
					return 0, errors.New("division by zero")
				}
				r = in.A / in.B
			case "power":
				r = math.Pow(in.A, in.B)
			default:
				return 0, fmt.Errorf("unknown op %q: use one of %v", in.Op, ops)
			}
			if math.IsInf(r, 0) || math.IsNaN(r) {
				return 0, errors.New("result is not a finite number")
			}
			return r, nil
		})
}
