package peers

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"testing"

	"github.com/agentryhq/agentry/db"
)

// framework is one peer under the same rows: ask runs one turn of the given
// mode on a fresh agent, conv runs the 25-turn conversation.
type framework struct {
	name string
	ask  func(ctx context.Context, m *Mock) (string, error)
	conv func(ctx context.Context, m *Mock, history int) (string, error)
}

func frameworks(tb testing.TB) []framework {
	ctx := context.Background()
	inputs := Inputs()
	et, err := EinoTool()
	if err != nil {
		tb.Fatal(err)
	}
	einoAsk := func(build func(m *Mock) (EinoRunner, error)) func(context.Context, *Mock) (string, error) {
		return func(ctx context.Context, m *Mock) (string, error) {
			ask, err := build(m)
			if err != nil {
				return "", err
			}
			return EinoConversation(ctx, ask, []string{"What is the weather in Paris?"}, 0)
		}
	}
	react := func(m *Mock) (EinoRunner, error) {
		a, err := EinoReact(ctx, m, einoTools(et))
		return ReactRunner(a), err
	}
	adkb := func(m *Mock) (EinoRunner, error) {
		r, err := EinoADK(ctx, m, einoTools(et))
		return ADKRunner(r), err
	}
	einoConv := func(build func(m *Mock) (EinoRunner, error)) func(context.Context, *Mock, int) (string, error) {
		return func(ctx context.Context, m *Mock, history int) (string, error) {
			ask, err := build(m)
			if err != nil {
				return "", err
			}
			return EinoConversation(ctx, ask, inputs, history)
		}
	}
	return []framework{
		{name: "Agentry",
			ask: func(ctx context.Context, m *Mock) (string, error) {
				a, err := AgentryAgent(m, agentryTools(), 0)
				if err != nil {
					return "", err
				}
				return AgentryAsk(ctx, a, "What is the weather in Paris?", "")
			},
			conv: func(ctx context.Context, m *Mock, history int) (string, error) {
				a, err := AgentryAgent(m, agentryTools(), history)
				if err != nil {
					return "", err
				}
				return AgentryConversation(ctx, a, 1, inputs)
			}},
		{name: "EinoReact", ask: einoAsk(react), conv: einoConv(react)},
		{name: "EinoADK", ask: einoAsk(adkb), conv: einoConv(adkb)},
		{name: "LangChainGo",
			ask: func(ctx context.Context, m *Mock) (string, error) {
				return LCGAsk(ctx, LCGExecutor(m, LCGTools(), 0), "What is the weather in Paris?")
			},
			conv: func(ctx context.Context, m *Mock, history int) (string, error) {
				return LCGConversation(ctx, m, LCGTools(), inputs, history)
			}},
	}
}

// TestSameWork proves each framework did the same work on every row: the
// same answer, the tool ran exactly once on the tool row, and the model saw
// the expected number of earlier turns on every call.
func TestSameWork(t *testing.T) {
	ctx := context.Background()
	for _, fw := range frameworks(t) {
		t.Run(fw.name+"/single", func(t *testing.T) {
			m := &Mock{Mode: Single, Record: true}
			before := ToolRuns.Load()
			got, err := fw.ask(ctx, m)
			if err != nil || got != SingleAnswer {
				t.Fatalf("answer %q, %v", got, err)
			}
			if ToolRuns.Load() != before || !slices.Equal(m.Seen, []int{0}) {
				t.Fatalf("tool runs %d, model calls saw %v", ToolRuns.Load()-before, m.Seen)
			}
		})
		t.Run(fw.name+"/tool", func(t *testing.T) {
			m := &Mock{Mode: ToolCall, Record: true}
			before := ToolRuns.Load()
			got, err := fw.ask(ctx, m)
			if err != nil || got != ToolAnswer {
				t.Fatalf("answer %q, %v", got, err)
			}
			if ToolRuns.Load()-before != 1 || !slices.Equal(m.Seen, []int{0, 0}) {
				t.Fatalf("tool runs %d, model calls saw %v", ToolRuns.Load()-before, m.Seen)
			}
		})
		for _, h := range []int{-1, LastRuns} {
			t.Run(fmt.Sprintf("%s/conversation-history-%d", fw.name, h), func(t *testing.T) {
				m := &Mock{Mode: Chat, Record: true}
				got, err := fw.conv(ctx, m, h)
				if err != nil || got != ChatAnswer {
					t.Fatalf("answer %q, %v", got, err)
				}
				want := make([]int, Turns)
				for k := range want {
					want[k] = k
					if h > 0 {
						want[k] = min(k, h)
					}
				}
				if !slices.Equal(m.Seen, want) {
					t.Fatalf("earlier turns seen per call %v, want %v", m.Seen, want)
				}
			})
		}
	}
}

// TestAgentryConversation_DropsItsHistory proves the Agentry conversation row
// ends as the peers' do: its session and runs are gone from the store after
// the 25th turn (the delete is part of the timed work), so the store does not
// grow with b.N, while every turn still read the history it stored.
func TestAgentryConversation_DropsItsHistory(t *testing.T) {
	ctx := context.Background()
	for _, h := range []int{-1, LastRuns} {
		m := &Mock{Mode: Chat, Record: true}
		a, err := AgentryAgent(m, agentryTools(), h)
		if err != nil {
			t.Fatal(err)
		}
		for n := 1; n <= 3; n++ {
			if got, err := AgentryConversation(ctx, a, n, Inputs()); err != nil || got != ChatAnswer {
				t.Fatalf("history %d, conversation %d: answer %q, %v", h, n, got, err)
			}
			runs, _, err := a.DB().GetRuns(ctx, db.RunFilter{Limit: 100, Page: 1})
			if err != nil || len(runs) != 0 {
				t.Fatalf("history %d, conversation %d: %d runs left in the store, %v", h, n, len(runs), err)
			}
			if s, err := a.DB().GetSession(ctx, "peers-"+strconv.Itoa(n)); !errors.Is(err, db.ErrNotFound) {
				t.Fatalf("history %d, conversation %d: session %v left, %v", h, n, s, err)
			}
		}
		var want []int
		for range 3 {
			for k := range Turns {
				if h > 0 {
					k = min(k, h)
				}
				want = append(want, k)
			}
		}
		if !slices.Equal(m.Seen, want) {
			t.Fatalf("history %d: earlier turns seen per call %v, want %v", h, m.Seen, want)
		}
	}
}
