package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"sync"
	"testing"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/memory"
	"github.com/agentryhq/agentry/model"
	"github.com/agentryhq/agentry/model/scripted"
	"github.com/agentryhq/agentry/run"
	"github.com/agentryhq/agentry/tool"
)

// holder keeps every request's message slice as the agent handed it (no
// copy) and, beside it, the JSON of what the slice held at call time.
type holder struct {
	model.Model
	mu    sync.Mutex
	held  [][]model.Message
	shots []string
}

func (h *holder) Stream(ctx context.Context, req *model.Request) iter.Seq2[*model.Chunk, error] {
	b, err := json.Marshal(req.Messages)
	if err != nil {
		panic(err)
	}
	h.mu.Lock()
	h.held = append(h.held, req.Messages)
	h.shots = append(h.shots, string(b))
	h.mu.Unlock()
	return h.Model.Stream(ctx, req)
}

// A model may keep the messages of a request: nothing a later turn of the
// conversation does (history, its own messages, a tool turn) may change what
// an earlier request held, whether the history is cached or read back.
func TestHistory_LaterTurnsDoNotChangeAnEarlierRequest(t *testing.T) {
	t.Parallel()
	for _, history := range []int{3, 30} {
		t.Run(fmt.Sprintf("history=%d", history), func(t *testing.T) {
			t.Parallel()
			h := &holder{Model: script(t,
				scripted.Turn{ToolCalls: []scripted.ToolCall{{Name: "get_weather", Args: map[string]any{"city": "Paris"}}}},
				scripted.Turn{Content: "It is sunny."},
				scripted.Turn{Content: "Noted."},
			)}
			a := mustAgent(t, Config{Name: "Alias", DB: db.New("", memory.New()), AddHistoryToContext: true,
				NumHistoryRuns: history, Model: h, Tools: []tool.Tool{weatherTool()}})
			ctx := context.Background()
			for i := range 8 {
				if _, err := a.Run(ctx, run.TextInput(fmt.Sprintf("turn %d", i)), WithSessionID("s")); err != nil {
					t.Fatal(err)
				}
			}
			h.mu.Lock()
			defer h.mu.Unlock()
			if len(h.held) < 8 {
				t.Fatalf("%d model calls, want at least 8", len(h.held))
			}
			for i, msgs := range h.held {
				b, err := json.Marshal(msgs)
				if err != nil {
					t.Fatal(err)
				}
				if string(b) != h.shots[i] {
					t.Errorf("request %d changed after it was sent:\n sent %s\n  now %s", i, h.shots[i], b)
				}
			}
			if last := h.held[len(h.held)-1]; countFromHistory(last) == 0 {
				t.Fatalf("the last request has no history: %+v", last)
			}
		})
	}
}

func countFromHistory(msgs []model.Message) int {
	n := 0
	for _, m := range msgs {
		if m.FromHistory {
			n++
		}
	}
	return n
}
