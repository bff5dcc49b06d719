package peers

import (
	"context"
	"testing"

	eitool "github.com/cloudwego/eino/components/tool"

	"github.com/agentryhq/agentry/tool"
)

// Each row is one benchmark with a sub-benchmark per framework, so run.sh can
// run the frameworks interleaved (-bench '/^Name$').

func agentryTools() []tool.Tool { return []tool.Tool{agentryTool()} }

func einoTools(t eitool.BaseTool) []eitool.BaseTool { return []eitool.BaseTool{t} }

var sink any

func BenchmarkConstruction(b *testing.B) {
	ctx := context.Background()
	b.Run("Agentry", func(b *testing.B) {
		m, ts := &Mock{}, agentryTools()
		b.ReportAllocs()
		for b.Loop() {
			a, err := AgentryAgent(m, ts, 0)
			if err != nil {
				b.Fatal(err)
			}
			sink = a
		}
	})
	et, err := EinoTool()
	if err != nil {
		b.Fatal(err)
	}
	b.Run("EinoReact", func(b *testing.B) {
		m, ts := &Mock{}, einoTools(et)
		b.ReportAllocs()
		for b.Loop() {
			a, err := EinoReact(ctx, m, ts)
			if err != nil {
				b.Fatal(err)
			}
			sink = a
		}
	})
	b.Run("EinoADK", func(b *testing.B) {
		m, ts := &Mock{}, einoTools(et)
		b.ReportAllocs()
		for b.Loop() {
			r, err := EinoADK(ctx, m, ts)
			if err != nil {
				b.Fatal(err)
			}
			sink = r
		}
	})
	b.Run("LangChainGo", func(b *testing.B) {
		m, ts := &Mock{}, LCGTools()
		b.ReportAllocs()
		for b.Loop() {
			sink = LCGExecutor(m, ts, 0)
		}
	})
}

// turn benchmarks one run of the given mode on an agent built once.
func turn(b *testing.B, mode Mode, want string) {
	ctx := context.Background()
	q := "What is the weather in Paris?"
	check := func(b *testing.B, got string, err error) {
		if err != nil || got != want {
			b.Fatalf("answer %q, %v", got, err)
		}
	}
	b.Run("Agentry", func(b *testing.B) {
		a, err := AgentryAgent(&Mock{Mode: mode}, agentryTools(), 0)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			got, err := AgentryAsk(ctx, a, q, "")
			check(b, got, err)
		}
	})
	et, err := EinoTool()
	if err != nil {
		b.Fatal(err)
	}
	b.Run("EinoReact", func(b *testing.B) {
		a, err := EinoReact(ctx, &Mock{Mode: mode}, einoTools(et))
		if err != nil {
			b.Fatal(err)
		}
		ask := ReactRunner(a)
		b.ReportAllocs()
		for b.Loop() {
			got, err := EinoConversation(ctx, ask, []string{q}, 0)
			check(b, got, err)
		}
	})
	b.Run("EinoADK", func(b *testing.B) {
		r, err := EinoADK(ctx, &Mock{Mode: mode}, einoTools(et))
		if err != nil {
			b.Fatal(err)
		}
		ask := ADKRunner(r)
		b.ReportAllocs()
		for b.Loop() {
			got, err := EinoConversation(ctx, ask, []string{q}, 0)
			check(b, got, err)
		}
	})
	b.Run("LangChainGo", func(b *testing.B) {
		e := LCGExecutor(&Mock{Mode: mode}, LCGTools(), 0)
		b.ReportAllocs()
		for b.Loop() {
			got, err := LCGAsk(ctx, e, q)
			check(b, got, err)
		}
	})
}

func BenchmarkSingleTurn(b *testing.B) { turn(b, Single, SingleAnswer) }

func BenchmarkToolCall(b *testing.B) { turn(b, ToolCall, ToolAnswer) }

// conversation benchmarks 25 turns in memory per op, in a new session (or a
// new history slice or memory) each op; the agent is built once where the
// framework allows.
func conversation(b *testing.B, history int) {
	ctx := context.Background()
	inputs := Inputs()
	check := func(b *testing.B, got string, err error) {
		if err != nil || got != ChatAnswer {
			b.Fatalf("answer %q, %v", got, err)
		}
	}
	b.Run("Agentry", func(b *testing.B) {
		a, err := AgentryAgent(&Mock{Mode: Chat}, agentryTools(), history)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		n := 0
		for b.Loop() {
			n++
			got, err := AgentryConversation(ctx, a, n, inputs)
			check(b, got, err)
		}
	})
	et, err := EinoTool()
	if err != nil {
		b.Fatal(err)
	}
	b.Run("EinoReact", func(b *testing.B) {
		a, err := EinoReact(ctx, &Mock{Mode: Chat}, einoTools(et))
		if err != nil {
			b.Fatal(err)
		}
		ask := ReactRunner(a)
		b.ReportAllocs()
		for b.Loop() {
			got, err := EinoConversation(ctx, ask, inputs, history)
			check(b, got, err)
		}
	})
	b.Run("EinoADK", func(b *testing.B) {
		r, err := EinoADK(ctx, &Mock{Mode: Chat}, einoTools(et))
		if err != nil {
			b.Fatal(err)
		}
		ask := ADKRunner(r)
		b.ReportAllocs()
		for b.Loop() {
			got, err := EinoConversation(ctx, ask, inputs, history)
			check(b, got, err)
		}
	})
	b.Run("LangChainGo", func(b *testing.B) {
		m, ts := &Mock{Mode: Chat}, LCGTools()
		b.ReportAllocs()
		for b.Loop() {
			got, err := LCGConversation(ctx, m, ts, inputs, history)
			check(b, got, err)
		}
	})
}

func BenchmarkConversation25Whole(b *testing.B) { conversation(b, -1) }

func BenchmarkConversation25Last3(b *testing.B) { conversation(b, LastRuns) }
