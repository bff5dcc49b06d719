package codemode_test

import (
	"context"
	"fmt"
	"iter"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/codemode"
	"github.com/agentryhq/agentry/model"
	"github.com/agentryhq/agentry/model/scripted"
	"github.com/agentryhq/agentry/run"
	"github.com/agentryhq/agentry/tool"
)

// countingModel counts the requests (round trips) a run makes.
type countingModel struct {
	model.Model
	n atomic.Int64
}

func (m *countingModel) Stream(ctx context.Context, req *model.Request) iter.Seq2[*model.Chunk, error] {
	m.n.Add(1)
	return m.Model.Stream(ctx, req)
}

// stepTool is one step of a dependent chain: it returns x + 1.
func stepTool() tool.Tool {
	type in struct {
		X int `json:"x"`
	}
	return tool.MustFunc(tool.FuncConfig{Name: "step", Description: "Returns x + 1."},
		func(_ context.Context, a in) (map[string]int, error) { return map[string]int{"x": a.X + 1}, nil })
}

// BenchmarkDependentToolCalls20 is a task needing 20 tool calls, each
// depending on the previous result: with plain tool calling the model asks
// for them one turn at a time; with CodeMode it writes one loop. The _20ms
// variants give every model request 20 ms of latency, as a (fast) remote
// model would.
func BenchmarkDependentToolCalls20(b *testing.B) {
	const n = 20
	var plain []scripted.Turn
	for i := range n {
		plain = append(plain, scripted.Turn{ToolCalls: []scripted.ToolCall{{Name: "step", Args: map[string]any{"x": i}}}})
	}
	plain = append(plain, scripted.Turn{Content: "20"})
	code := `let x = 0; for (let i = 0; i < 20; i++) x = (await step({x})).x; x`
	coded := []scripted.Turn{{ToolCalls: []scripted.ToolCall{{Name: "execute", Args: map[string]any{"code": code}}}}, {Content: "20"}}
	for _, bc := range []struct {
		name    string
		turns   []scripted.Turn
		code    bool
		latency time.Duration
	}{
		{"plain_tool_calling", plain, false, 0},
		{"codemode", coded, true, 0},
		{"plain_tool_calling_20ms_model", plain, false, 20 * time.Millisecond},
		{"codemode_20ms_model", coded, true, 20 * time.Millisecond},
	} {
		b.Run(bc.name, func(b *testing.B) {
			m := &countingModel{Model: scripted.MustNew(scripted.Config{Turns: bc.turns, Latency: bc.latency})}
			tools := []tool.Tool{stepTool()}
			if bc.code {
				cm, err := codemode.New(codemode.Config{Tools: tools})
				if err != nil {
					b.Fatal(err)
				}
				defer cm.Close()
				tools = cm.Tools()
			}
			a, err := agent.New(agent.Config{Model: m, Tools: tools})
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				out, err := a.Run(context.Background(), run.TextInput("count to 20"), agent.WithSessionID("s"))
				if err != nil || out.Content != "20" {
					b.Fatalf("run: %v %v", err, out.Content)
				}
				if bc.code && !strings.Contains(out.Tools[len(out.Tools)-1].Result, `"result":20`) {
					b.Fatalf("cell: %s", out.Tools[len(out.Tools)-1].Result)
				}
			}
			b.ReportMetric(float64(m.n.Load())/float64(b.N), "model-requests/op")
		})
	}
}

// BenchmarkColdStart is a session's first cell: the interpreter is built
// (sandbox, handles) and runs a trivial cell.
func BenchmarkColdStart(b *testing.B) {
	tools, _ := testTools(b)
	cm, err := codemode.New(codemode.Config{Tools: tools, MaxKernels: 8})
	if err != nil {
		b.Fatal(err)
	}
	defer cm.Close()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		if c, err := cm.Run(context.Background(), "s"+strconv.Itoa(i), "", "1"); err != nil || c.Status != codemode.StatusOK {
			b.Fatal(err, c.JSON())
		}
	}
}

// BenchmarkWarmTrivialCell is a cell in a session whose interpreter exists.
func BenchmarkWarmTrivialCell(b *testing.B) {
	tools, _ := testTools(b)
	cm, err := codemode.New(codemode.Config{Tools: tools})
	if err != nil {
		b.Fatal(err)
	}
	defer cm.Close()
	if _, err := cm.Run(context.Background(), "s", "", "let n = 0"); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if c, err := cm.Run(context.Background(), "s", "", "n + 1"); err != nil || c.Status != codemode.StatusOK {
			b.Fatal(err, c.JSON())
		}
	}
}

// BenchmarkIdleInterpreterMemory reports the heap one idle interpreter
// holds after a cell with a tool call.
func BenchmarkIdleInterpreterMemory(b *testing.B) {
	const n = 64
	tools, _ := testTools(b)
	for b.Loop() {
		cm, err := codemode.New(codemode.Config{Tools: tools, MaxKernels: n})
		if err != nil {
			b.Fatal(err)
		}
		before := heapInUse()
		for i := range n {
			if _, err := cm.Run(context.Background(), fmt.Sprint("s", i), "", `let w = await echo({text: "hi"}); w`); err != nil {
				b.Fatal(err)
			}
		}
		after := heapInUse()
		b.ReportMetric(float64(after-before)/n/1024, "KiB/interpreter")
		runtime.KeepAlive(cm)
		cm.Close()
	}
}

// BenchmarkConcurrentSessionsRSS runs one cell in each of 64 sessions at
// once and reports the process's resident memory afterwards.
func BenchmarkConcurrentSessionsRSS(b *testing.B) {
	const n = 64
	tools, _ := testTools(b)
	for b.Loop() {
		cm, err := codemode.New(codemode.Config{Tools: tools, MaxKernels: n})
		if err != nil {
			b.Fatal(err)
		}
		base := rssKiB()
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				c, err := cm.Run(context.Background(), fmt.Sprint("s", i), "", `const ws = await Promise.all([get_weather({city: "Oslo"}), echo({text: "x"})]); const data = Array.from({length: 1000}, (_, i) => ({i, w: ws[0].temp_c})); data.length`)
				if err != nil || c.Status != codemode.StatusOK {
					b.Errorf("%v %s", err, c.JSON())
				}
			})
		}
		wg.Wait()
		b.ReportMetric(float64(rssKiB())/1024, "MiB-RSS")
		b.ReportMetric(float64(rssKiB()-base)/1024, "MiB-RSS-growth")
		cm.Close()
	}
}

func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// rssKiB reads VmRSS from /proc (0 where there is none).
func rssKiB() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			v, _ := strconv.ParseInt(f[1], 10, 64)
			return v
		}
	}
	return 0
}

// BenchmarkIterationCell is a warm cell that walks built-in iterators
// 10,000 steps each (a for…of over an array, a spread of a string, a
// for…of over a Map's entries): the cost of the abort check every
// iterator step carries (installIterators), per cell; ns/step is the op's
// time over the 30,000 steps.
func BenchmarkIterationCell(b *testing.B) {
	tools, _ := testTools(b)
	cm, err := codemode.New(codemode.Config{Tools: tools})
	if err != nil {
		b.Fatal(err)
	}
	defer cm.Close()
	setup := `const arr = Array.from({length: 10000}, (_, i) => i)
const str = "x".repeat(10000)
const m = new Map(arr.slice(0, 5000).map(i => [i, i]))
const m2 = new Map(arr.slice(5000).map(i => [i, i]))`
	if c, err := cm.Run(context.Background(), "s", "", setup); err != nil || c.Status != codemode.StatusOK {
		b.Fatal(err, c.JSON())
	}
	const cell = `let t = 0
for (const x of arr) t += x
t += [...str].length
for (const [k, v] of m) t += v
for (const [k, v] of m2) t += v
t`
	b.ReportAllocs()
	for b.Loop() {
		if c, err := cm.Run(context.Background(), "s", "", cell); err != nil || c.Status != codemode.StatusOK {
			b.Fatal(err, c.JSON())
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/30000, "ns/step")
}
