package tool_test

import (
	"bytes"
	"context"
	"errors"
	"runtime"
	"strconv"
	"testing"

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

// A tool that honours cancellation and has no timeout runs on the caller's
// goroutine, even under a cancellable context; its arguments are decoded there.
func TestExecute_HonorsCancelRunsInline(t *testing.T) {
	var ran []int
	s := goroutineSet(t, tool.FuncConfig{Name: "inline", HonorsCancel: true}, &ran)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r := s.Execute(ctx, model.ToolCall{Name: "inline", Arguments: `{"city":{}}`})
	me := goid()
	if r.Err != nil || len(ran) != 2 || ran[0] != me || ran[1] != me {
		t.Fatalf("result %v; decoded and ran on %v, caller %d", r.Err, ran, me)
	}
	cancel()
	if r := s.Execute(ctx, model.ToolCall{Name: "inline", Arguments: `{"city":{}}`}); r.Err == nil {
		t.Fatal("a call under an ended context ran")
	}
}

// Other tools decode on the caller's goroutine and run on a worker goroutine
// (reuse of warm workers: TestGoWarm_ReusesIdleWorker).
func TestExecute_DecodesOnCallerAndReusesWarmWorker(t *testing.T) {
	var ran []int
	s := goroutineSet(t, tool.FuncConfig{Name: "worker"}, &ran)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	me := goid()
	for range 3 {
		if r := s.Execute(ctx, model.ToolCall{Name: "worker", Arguments: `{"city":{}}`}); r.Err != nil {
			t.Fatal(r.Err)
		}
	}
	if ran[0] != me || ran[2] != me || ran[4] != me {
		t.Fatalf("arguments decoded on %v, not the caller %d", []int{ran[0], ran[2], ran[4]}, me)
	}
	if ran[1] == me {
		t.Fatal("a tool without HonorsCancel ran on the caller's goroutine")
	}
}

// Panics are recovered on both paths, and a worker survives a panic.
func TestExecute_PanicRecoveredInlineAndOnWorker(t *testing.T) {
	for _, honors := range []bool{true, false} {
		s, err := tool.NewSet([]tool.Tool{tool.MustFunc(tool.FuncConfig{Name: "boom", Description: "panics", HonorsCancel: honors},
			func(context.Context, struct{}) (string, error) { panic("boom") })})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		for range 2 {
			if r := s.Execute(ctx, model.ToolCall{Name: "boom", Arguments: `{}`}); !errors.Is(r.Err, tool.ErrPanicked) {
				t.Fatalf("honors=%v: %v, want ErrPanicked", honors, r.Err)
			}
		}
		cancel()
	}
}
