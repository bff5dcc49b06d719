package tool_test

import (
	"bytes"
	"context"
	"errors"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentryhq/agentry/model"
	"github.com/agentryhq/agentry/tool"
)

// goid is the current goroutine's id, read from its stack header.
func goid() int {
	var buf [64]byte
	b := buf[:runtime.Stack(buf[:], false)]
	b = bytes.TrimPrefix(b, []byte("goroutine "))
	id, _ := strconv.Atoi(string(b[:bytes.IndexByte(b, ' ')]))
	return id
}

// decodedOn records the goroutine its arguments were decoded on.
type decodedOn struct {
	G int `json:"-"`
}

func (d *decodedOn) UnmarshalJSON([]byte) error { d.G = goid(); return nil }

type onArgs struct {
	City decodedOn `json:"city"`
}

func goroutineSet(t *testing.T, cfg tool.FuncConfig, ran *[]int) *tool.Set {
	t.Helper()
	cfg.Description = "records where it ran"
	s, err := tool.NewSet([]tool.Tool{tool.MustFunc(cfg, func(_ context.Context, in onArgs) (string, error) {
		*ran = append(*ran, in.City.G, goid())
		if in.City.G < 0 {
			panic("unreachable")
		}
		return "ok", nil
	})})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// A tool without a timeout runs on the caller's goroutine, even under a
// cancellable context, whether or not it declares HonorsCancel; its arguments
// are decoded there.
func TestExecute_ToolWithoutTimeoutRunsInline(t *testing.T) {
	for _, honors := range []bool{true, false} {
		var ran []int
		s := goroutineSet(t, tool.FuncConfig{Name: "inline", HonorsCancel: honors}, &ran)
		ctx, cancel := context.WithCancel(context.Background())
		r := s.Execute(ctx, model.ToolCall{Name: "inline", Arguments: `{"city":{}}`})
		me := goid()
		if r.Err != nil || len(ran) != 2 || ran[0] != me || ran[1] != me {
			t.Fatalf("honors=%v: result %v; decoded and ran on %v, caller %d", honors, r.Err, ran, me)
		}
		cancel()
		if r := s.Execute(ctx, model.ToolCall{Name: "inline", Arguments: `{"city":{}}`}); r.Err == nil {
			t.Fatalf("honors=%v: a call under an ended context ran", honors)
		}
	}
}

// A tool with a timeout decodes on the caller's goroutine and runs on a
// worker goroutine (reuse of warm workers: TestGoWarm_ReusesIdleWorker).
func TestExecute_ToolWithTimeoutDecodesOnCallerRunsOnWorker(t *testing.T) {
	var ran []int
	s := goroutineSet(t, tool.FuncConfig{Name: "worker", Timeout: time.Minute}, &ran)
	me := goid()
	for range 3 {
		if r := s.Execute(context.Background(), model.ToolCall{Name: "worker", Arguments: `{"city":{}}`}); r.Err != nil {
			t.Fatal(r.Err)
		}
	}
	if ran[0] != me || ran[2] != me || ran[4] != me {
		t.Fatalf("arguments decoded on %v, not the caller %d", []int{ran[0], ran[2], ran[4]}, me)
	}
	if ran[1] == me {
		t.Fatal("a tool with a timeout ran on the caller's goroutine")
	}
}

// A tool with a timeout that ignores its context does not hold the caller
// past a cancellation; one without a timeout is waited for, and a failure it
// returns after the cancellation reads as an interruption.
func TestExecute_CancellationWithAndWithoutTimeout(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	started := make(chan struct{}, 1)
	ignoring := func(context.Context, struct{}) (string, error) {
		started <- struct{}{}
		<-release
		return "late", nil
	}
	s := mustSet(t, mustFunc(t, tool.FuncConfig{Name: "ignores", Description: "d", Timeout: time.Hour}, ignoring))
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-started; cancel() }()
	if r := s.Execute(ctx, call("ignores", `{}`)); !errors.Is(r.Err, context.Canceled) || !strings.Contains(r.Content, "interrupted") {
		t.Fatalf("with a timeout: %v, want an interruption", r.Err)
	}

	honouring := func(ctx context.Context, _ struct{}) (string, error) {
		started <- struct{}{}
		<-ctx.Done()
		return "", errors.New("stopped")
	}
	s = mustSet(t, mustFunc(t, tool.FuncConfig{Name: "honours", Description: "d"}, honouring))
	ctx, cancel = context.WithCancel(context.Background())
	go func() { <-started; cancel() }()
	if r := s.Execute(ctx, call("honours", `{}`)); !errors.Is(r.Err, context.Canceled) || !strings.Contains(r.Content, "interrupted") {
		t.Fatalf("without a timeout: %v, want an interruption", r.Err)
	}
}

// Panics are recovered on both paths, and a worker survives a panic.
func TestExecute_PanicRecoveredInlineAndOnWorker(t *testing.T) {
	for _, timeout := range []time.Duration{0, time.Minute} {
		s, err := tool.NewSet([]tool.Tool{tool.MustFunc(tool.FuncConfig{Name: "boom", Description: "panics", Timeout: timeout},
			func(context.Context, struct{}) (string, error) { panic("boom") })})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		for range 2 {
			if r := s.Execute(ctx, model.ToolCall{Name: "boom", Arguments: `{}`}); !errors.Is(r.Err, tool.ErrPanicked) {
				t.Fatalf("timeout=%v: %v, want ErrPanicked", timeout, r.Err)
			}
		}
		cancel()
	}
}

// A Func tool's call under a cancellable context, with arguments the fast
// paths take, allocates nothing in the Set: no copy of the argument text, no
// decoder state, no goroutine hand-off.
func TestExecute_FuncToolCallDoesNotAllocate(t *testing.T) {
	type args struct {
		City string `json:"city"`
		Days int    `json:"days"`
	}
	s := mustSet(t, mustFunc(t, tool.FuncConfig{Name: "weather", Description: "d"}, func(_ context.Context, in args) (string, error) {
		if in.City != "Paris" || in.Days != 3 {
			return "", errors.New("wrong arguments")
		}
		return "sunny", nil
	}))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := call("weather", `{"city":"Paris","days":3}`)
	if n := testing.AllocsPerRun(100, func() {
		if r := s.Execute(ctx, c); r.Err != nil || r.Content != "sunny" {
			t.Fatalf("result %+v", r)
		}
	}); n != 0 {
		t.Fatalf("%v allocations per call, want 0", n)
	}
}
