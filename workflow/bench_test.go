package workflow

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/model/scripted"
	"github.com/agentryhq/agentry/run"
)

// BenchmarkWorkflow_TenSteps runs ten steps in sequence: agents on the
// scripted model (what a step costs with an agent in it) and Go functions
// (what the workflow itself costs per step), without a database.
func BenchmarkWorkflow_TenSteps(b *testing.B) {
	for _, kind := range []string{"agents", "functions"} {
		b.Run(kind, func(b *testing.B) {
			var steps []Step
			for i := range 10 {
				if kind == "agents" {
					a, err := agent.New(agent.Config{ID: fmt.Sprintf("a%d", i), Model: scripted.Reply("ok")})
					if err != nil {
						b.Fatal(err)
					}
					steps = append(steps, Step{Runner: a})
				} else {
					steps = append(steps, Step{Name: fmt.Sprintf("f%d", i), Func: func(context.Context, *StepInput) (FuncResult, error) {
						return FuncResult{Content: "ok"}, nil
					}})
				}
			}
			wf, err := New(Config{ID: "ten", Steps: steps})
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if out, err := wf.Run(context.Background(), run.TextInput("go")); err != nil || out.Status != run.StatusCompleted {
					b.Fatal(out, err)
				}
			}
		})
	}
}

// BenchmarkParallel_EightSteps runs a Parallel of eight function steps.
// "noop": every branch returns at once, so the time is all overhead;
// "slowest-2ms": one branch sleeps 2 ms, and overhead-ns/op is the time
// beyond that branch.
func BenchmarkParallel_EightSteps(b *testing.B) {
	for _, slowest := range []time.Duration{0, 2 * time.Millisecond} {
		name := "noop"
		if slowest > 0 {
			name = "slowest-2ms"
		}
		b.Run(name, func(b *testing.B) {
			var branches []Step
			for i := range 8 {
				d := time.Duration(0)
				if i == 3 {
					d = slowest
				}
				branches = append(branches, Step{Name: fmt.Sprintf("b%d", i), Func: func(context.Context, *StepInput) (FuncResult, error) {
					if d > 0 {
						time.Sleep(d)
					}
					return FuncResult{Content: "ok"}, nil
				}})
			}
			wf, err := New(Config{ID: "par8", Steps: []Step{{Name: "p", Parallel: &Parallel{Steps: branches}}}})
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			start := time.Now()
			n := 0
			for b.Loop() {
				if out, err := wf.Run(context.Background(), run.TextInput("go")); err != nil || out.Status != run.StatusCompleted {
					b.Fatal(out, err)
				}
				n++
			}
			per := time.Since(start) / time.Duration(n)
			b.ReportMetric(float64(per-slowest), "overhead-ns/op")
		})
	}
}
