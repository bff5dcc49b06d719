package builtin

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/agentryhq/agentry/tool"
)

// ErrUnknown is returned for a tool name with no built-in.
var ErrUnknown = errors.New("builtin: unknown tool")

var constructors = map[string]func() (tool.Tool, error){
	"current_time": currentTime,
	"calculator":   calculator,
}

// Names lists the built-in tool names, sorted.
func Names() []string {
	out := make([]string, 0, len(constructors))
	for n := range constructors {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// New returns the built-in tool with this name.
func New(name string) (tool.Tool, error) {
	c, ok := constructors[name]
	if !ok {
		return nil, fmt.Errorf("%w %q (built-in tools: %v)", ErrUnknown, name, Names())
	}
	return c()
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

// Has reports whether name is a built-in tool.
func Has(name string) bool {
	_, ok := constructors[name]
	return ok
}
