// Package eval measures the three candidate interpreters for CodeMode on the
// numbers the ADR compares: cold start, a warm trivial cell, how long an
// interrupt takes to stop a busy loop, and what an allocation-heavy cell does.
// It is its own module so the candidates never enter the main go.mod.
package eval

import (
	"runtime"
	"testing"
	"time"

	"github.com/dop251/goja"
	"github.com/go-python/gpython/py"
	_ "github.com/go-python/gpython/stdlib"
	"go.starlark.net/starlark"
	"go.starlark.net/syntax"
)

var starOpts = &syntax.FileOptions{While: true, TopLevelControl: true, GlobalReassign: true, Recursion: true}

func BenchmarkColdStart(b *testing.B) {
	b.Run("goja", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			r := goja.New()
			_ = r.Set("tool", func(s string) string { return s })
			if _, err := r.RunString(`1`); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("starlark", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			th := &starlark.Thread{Name: "cell"}
			pre := starlark.StringDict{"tool": starlark.NewBuiltin("tool", func(*starlark.Thread, *starlark.Builtin, starlark.Tuple, []starlark.Tuple) (starlark.Value, error) {
				return starlark.None, nil
			})}
			if _, err := starlark.ExecFileOptions(starOpts, th, "cell", "x = 1", pre); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("gpython", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			ctx := py.NewContext(py.DefaultContextOpts())
			if _, err := py.RunSrc(ctx, "x = 1", "cell", nil); err != nil {
				b.Fatal(err)
			}
			ctx.Close()
		}
	})
}

func BenchmarkWarmTrivialCell(b *testing.B) {
	b.Run("goja", func(b *testing.B) {
		r := goja.New()
		b.ReportAllocs()
		for b.Loop() {
			if _, err := r.RunString(`x = 1 + 1`); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("starlark", func(b *testing.B) {
		th := &starlark.Thread{Name: "cell"}
		globals := starlark.StringDict{}
		b.ReportAllocs()
		for b.Loop() {
			g, err := starlark.ExecFileOptions(starOpts, th, "cell", "x = 1 + 1", globals)
			if err != nil {
				b.Fatal(err)
			}
			for k, v := range g {
				globals[k] = v
			}
		}
	})
	b.Run("gpython", func(b *testing.B) {
		ctx := py.NewContext(py.DefaultContextOpts())
		defer ctx.Close()
		m, err := py.RunSrc(ctx, "x = 0", "cell", nil)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			if _, err := py.RunSrc(ctx, "x = 1 + 1", "cell", m); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestInterruptLatency starts a busy loop, interrupts it after 20 ms and
// reports how long the interpreter took to stop.
func TestInterruptLatency(t *testing.T) {
	const runs = 20
	measure := func(t *testing.T, run func() error, stop func()) time.Duration {
		var worst time.Duration
		for range runs {
			done := make(chan error, 1)
			go func() { done <- run() }()
			time.Sleep(20 * time.Millisecond)
			at := time.Now()
			stop()
			select {
			case <-done:
				worst = max(worst, time.Since(at))
			case <-time.After(2 * time.Second):
				t.Logf("did not stop within 2 s")
				return -1
			}
		}
		return worst
	}
	t.Run("goja", func(t *testing.T) {
		r := goja.New()
		d := measure(t, func() error { _, err := r.RunString(`while (true) {}`); r.ClearInterrupt(); return err },
			func() { r.Interrupt("stop") })
		t.Logf("goja: worst of %d interrupts: %v", runs, d)
	})
	t.Run("starlark", func(t *testing.T) {
		var th *starlark.Thread
		d := measure(t, func() error {
			th = &starlark.Thread{}
			_, err := starlark.ExecFileOptions(starOpts, th, "cell", "while True:\n  pass\n", nil)
			return err
		}, func() { th.Cancel("stop") })
		t.Logf("starlark: worst of %d cancels: %v", runs, d)
	})
}

// TestAllocationHeavyCell grows a string by doubling and reports how far the
// heap got before the interpreter refused, stopped, or was stopped by a
// watchdog that interrupts when the heap grows past 64 MiB.
func TestAllocationHeavyCell(t *testing.T) {
	const capBytes = 64 << 20
	heap := func() uint64 {
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	watch := func(stop func()) (func() uint64, func()) {
		base := heap()
		var peak uint64
		quit := make(chan struct{})
		done := make(chan struct{})
		go func() {
			defer close(done)
			tk := time.NewTicker(time.Millisecond)
			defer tk.Stop()
			for {
				select {
				case <-quit:
					return
				case <-tk.C:
					h := heap()
					peak = max(peak, h-min(h, base))
					if h > base+capBytes {
						stop()
					}
				}
			}
		}()
		return func() uint64 { return peak }, func() { close(quit); <-done }
	}
	t.Run("goja native limit", func(t *testing.T) {
		r := goja.New()
		_, err := r.RunString(`let s = "x"; for (let i = 0; i < 27; i++) s += s; s.length`) // 128 Mi chars
		t.Logf("goja: no limit of its own: 128 MiB string built, err=%v", err)
	})
	t.Run("goja with watchdog", func(t *testing.T) {
		r := goja.New()
		peak, end := watch(func() { r.Interrupt("memory") })
		_, err := r.RunString(`let s = "x"; while (true) s += s;`)
		end()
		t.Logf("goja + watchdog: err=%v, heap growth peak %d MiB", err, peak()>>20)
	})
	t.Run("starlark with watchdog", func(t *testing.T) {
		th := &starlark.Thread{}
		peak, end := watch(func() { th.Cancel("memory") })
		_, err := starlark.ExecFileOptions(starOpts, th, "cell", "s = 'x'\nwhile True:\n  s += s\n", nil)
		end()
		t.Logf("starlark + watchdog: err=%v, heap growth peak %d MiB", err, peak()>>20)
	})
	t.Run("gpython", func(t *testing.T) {
		t.Logf("gpython: not run; with no interrupt, a watchdog has nothing to call")
	})
}

// TestZInterruptGpython runs last: the loop it starts cannot be stopped and
// spins until the test binary exits.
func TestZInterruptGpython(t *testing.T) {
	ctx := py.NewContext(py.DefaultContextOpts())
	done := make(chan struct{})
	go func() {
		_, _ = py.RunSrc(ctx, "while True:\n  pass\n", "cell", nil)
		close(done)
	}()
	time.Sleep(20 * time.Millisecond)
	go ctx.Close() // the only stop gpython offers; it waits for the code
	select {
	case <-done:
		t.Logf("gpython: Close stopped the loop")
	case <-time.After(2 * time.Second):
		t.Logf("gpython: no way to stop a running loop (Close blocks and the loop runs on; the goroutine leaks)")
	}
}

// TestIdleMemory reports the heap held by 64 idle interpreters that each ran
// one trivial cell.
func TestIdleMemory(t *testing.T) {
	const n = 64
	heap := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	keep := make([]any, n)
	for _, c := range []struct {
		name string
		make func() any
	}{
		{"goja", func() any { r := goja.New(); _, _ = r.RunString("x = 1"); return r }},
		{"starlark", func() any {
			g, _ := starlark.ExecFileOptions(starOpts, &starlark.Thread{}, "cell", "x = 1", nil)
			return g
		}},
		{"gpython", func() any {
			ctx := py.NewContext(py.DefaultContextOpts())
			_, _ = py.RunSrc(ctx, "x = 1", "cell", nil)
			return ctx
		}},
	} {
		base := heap()
		for i := range keep {
			keep[i] = c.make()
		}
		t.Logf("%s: %d KiB per idle interpreter", c.name, (heap()-base)/n>>10)
		clear(keep)
	}
}
