package workflow

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"

	"cel.dev/cel-go/cel"

	"github.com/agentryhq/agentry/run"
)

// Condition, Loop and Router expressions are CEL, as in Agno 3.0 (its
// cel.py), with the same variables, so a YAML file means the same in both
// (docs/adr/workflow-expressions-cel.md). Evaluation is bounded by a cost
// limit: an expression from a config file cannot loop forever.
const celCostLimit = 100_000

var (
	stepInputEnv = sync.OnceValues(func() (*cel.Env, error) {
		return cel.NewEnv(
			cel.Variable("input", cel.StringType),
			cel.Variable("previous_step_content", cel.StringType),
			cel.Variable("previous_step_outputs", cel.MapType(cel.StringType, cel.StringType)),
			cel.Variable("additional_data", cel.MapType(cel.StringType, cel.DynType)),
			cel.Variable("session_state", cel.MapType(cel.StringType, cel.DynType)),
			cel.Variable("step_choices", cel.ListType(cel.StringType)),
		)
	})
	loopEnv = sync.OnceValues(func() (*cel.Env, error) {
		return cel.NewEnv(
			cel.Variable("current_iteration", cel.IntType),
			cel.Variable("max_iterations", cel.IntType),
			cel.Variable("all_success", cel.BoolType),
			cel.Variable("last_step_content", cel.StringType),
			cel.Variable("step_outputs", cel.MapType(cel.StringType, cel.StringType)),
		)
	})
)

// ErrExpression is returned for an expression that does not compile or does
// not give the type its place needs.
var ErrExpression = errors.New("workflow: invalid expression")

func compile(env func() (*cel.Env, error), src string, want ...*cel.Type) (cel.Program, error) {
	e, err := env()
	if err != nil {
		return nil, err
	}
	ast, iss := e.Compile(src)
	if iss != nil && iss.Err() != nil {
		return nil, fmt.Errorf("%w: %q: %s", ErrExpression, src, iss.Err())
	}
	ok := false
	for _, t := range want {
		if ast.OutputType().IsExactType(t) || ast.OutputType().IsExactType(cel.DynType) {
			ok = true
		}
	}
	if !ok {
		names := make([]string, len(want))
		for i, t := range want {
			names[i] = t.String()
		}
		return nil, fmt.Errorf("%w: %q gives %s, want %s", ErrExpression, src, ast.OutputType(), strings.Join(names, " or "))
	}
	return e.Program(ast, cel.CostLimit(celCostLimit), cel.InterruptCheckFrequency(100))
}

func stepInputVars(in *StepInput) map[string]any {
	prev := make(map[string]string, len(in.PreviousStepOutputs))
	for name, o := range in.PreviousStepOutputs {
		if o.Content != nil {
			prev[name] = run.ContentText(o.Content)
		} else {
			prev[name] = ""
		}
	}
	ad := in.AdditionalData
	if ad == nil {
		ad = map[string]any{}
	}
	var st map[string]any
	if in.State != nil {
		st = in.State.Snapshot()
	} else {
		st = map[string]any{}
	}
	pc := ""
	if in.PreviousStepContent != nil {
		pc = run.ContentText(in.PreviousStepContent)
	}
	return map[string]any{"input": in.Input, "previous_step_content": pc, "previous_step_outputs": prev,
		"additional_data": ad, "session_state": st, "step_choices": []string{}}
}

func compileCondition(src string) (func(*StepInput) (bool, error), error) {
	p, err := compile(stepInputEnv, src, cel.BoolType)
	if err != nil {
		return nil, err
	}
	return func(in *StepInput) (bool, error) {
		v, _, err := p.ContextEval(context.Background(), stepInputVars(in))
		if err != nil {
			return false, fmt.Errorf("condition %q: %w", src, err)
		}
		b, ok := v.Value().(bool)
		if !ok {
			return false, fmt.Errorf("condition %q gave %v, not a bool", src, v.Value())
		}
		return b, nil
	}, nil
}

func compileLoopEnd(src string) (func(LoopIteration) (bool, error), error) {
	p, err := compile(loopEnv, src, cel.BoolType)
	if err != nil {
		return nil, err
	}
	return func(it LoopIteration) (bool, error) {
		outs := make(map[string]string, len(it.Outputs))
		all, last := true, ""
		for i, o := range it.Outputs {
			c := ""
			if o.Content != nil {
				c = run.ContentText(o.Content)
			}
			name := o.StepName
			if name == "" {
				name = fmt.Sprintf("step_%d", i)
			}
			outs[name], last = c, c
			if o.Success != nil && !*o.Success {
				all = false
			}
		}
		v, _, err := p.ContextEval(context.Background(), map[string]any{"current_iteration": it.Iteration,
			"max_iterations": it.MaxIterations, "all_success": all, "last_step_content": last, "step_outputs": outs})
		if err != nil {
			return false, fmt.Errorf("end condition %q: %w", src, err)
		}
		b, ok := v.Value().(bool)
		if !ok {
			return false, fmt.Errorf("end condition %q gave %v, not a bool", src, v.Value())
		}
		return b, nil
	}, nil
}

func compileSelector(src string, choices []string) (func(*StepInput) ([]string, error), error) {
	// A list built of dynamic values ([session_state.route]) is list(dyn):
	// its elements are checked to be names when it is evaluated.
	p, err := compile(stepInputEnv, src, cel.StringType, cel.ListType(cel.StringType), cel.ListType(cel.DynType))
	if err != nil {
		return nil, err
	}
	return func(in *StepInput) ([]string, error) {
		vars := stepInputVars(in)
		vars["step_choices"] = choices
		v, _, err := p.ContextEval(context.Background(), vars)
		if err != nil {
			return nil, fmt.Errorf("selector %q: %w", src, err)
		}
		var names []string
		switch x := v.Value().(type) {
		case string:
			names = []string{x}
		default:
			l, err := v.ConvertToNative(reflectStrings)
			if err != nil {
				return nil, fmt.Errorf("selector %q gave %v, not a step name", src, v.Value())
			}
			names = l.([]string)
		}
		for _, n := range names {
			if !slices.Contains(choices, n) {
				return nil, fmt.Errorf("selector %q chose %q, not one of %v", src, n, choices)
			}
		}
		return names, nil
	}, nil
}

var reflectStrings = reflect.TypeOf([]string(nil))
