package team

import (
	"context"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/model/scripted"
	"github.com/agentryhq/agentry/run"
)

// fanOutGoroutines counts the goroutines of a fan-out (its members and
// its waiter) still alive.
func fanOutGoroutines() int {
	buf := make([]byte, 1<<22)
	n := 0
	for g := range strings.SplitSeq(string(buf[:runtime.Stack(buf, true)]), "\n\n") {
		if strings.Contains(g, "team.(*Team).fanOut") {
			n++
		}
	}
	return n
}

// A stream consumer whose loop body panics on a member event forwarded
// from a broadcast: the fan-out forwarding it was unwound by the panic
// without releasing the other members, left blocked forever handing over
// their next events (with the goroutine waiting for them). Not parallel:
// it counts the package's fan-out goroutines.
func TestFanOut_AConsumerPanicLeavesNoMemberBlocked(t *testing.T) {
	mk := func(id string) *agent.Agent {
		return mustAgent(t, agent.Config{ID: id, Model: scripted.MustNew(scripted.Config{ChunkLatency: 2 * time.Millisecond,
			Turns: []scripted.Turn{{Content: "one two three four five six seven eight nine ten"}}})})
	}
	leader := script(call(ToolDelegateAll, map[string]any{"task": "x"}), answer("fin"))
	tm := mustTeam(t, Config{ID: "t", Mode: ModeBroadcast, Model: leader, Members: []*agent.Agent{mk("a"), mk("b"), mk("c")}})
	func() {
		defer func() { _ = recover() }()
		for ev, err := range tm.Stream(context.Background(), run.TextInput("go")) {
			if err != nil {
				t.Fatal(err)
			}
			if ev.AgentID != "" {
				panic("the consumer's bug")
			}
		}
	}()
	deadline := time.Now().Add(5 * time.Second)
	for fanOutGoroutines() > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d fan-out goroutines still blocked after the consumer's panic", fanOutGoroutines())
		}
		time.Sleep(20 * time.Millisecond)
	}
}
