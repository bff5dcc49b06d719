package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"strings"
	"sync"
	"testing"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/memory"
	"github.com/agentryhq/agentry/model"
	"github.com/agentryhq/agentry/model/scripted"
	"github.com/agentryhq/agentry/run"
	"github.com/agentryhq/agentry/tool"
)

// holder keeps every request as the agent handed it (its History and
// Messages, no copy) and, beside it, the JSON of what it held at call time.
type holder struct {
	model.Model
	mu    sync.Mutex
	held  []model.Request
	shots []string
}

func (h *holder) Stream(ctx context.Context, req *model.Request) iter.Seq2[*model.Chunk, error] {
	b, err := json.Marshal(req.Collect())
	if err != nil {
		panic(err)
	}
	h.mu.Lock()
	h.held = append(h.held, *req)
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
			for i, req := range h.held {
				b, err := json.Marshal(req.Collect())
				if err != nil {
					t.Fatal(err)
				}
				if string(b) != h.shots[i] {
					t.Errorf("request %d changed after it was sent:\n sent %s\n  now %s", i, h.shots[i], b)
				}
			}
			if last := h.held[len(h.held)-1].Collect(); countFromHistory(last) == 0 {
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

// scribbler records each request's messages as JSON, then writes over the
// messages it reads (the copies Request.All yields) and appends to the
// request's Messages, as a careless model or hook might. (The messages
// themselves, the run's own and the shared history alike, are not to be
// modified: model.Model's contract.)
type scribbler struct {
	model.Model
	mu    sync.Mutex
	shots []string
}

func (s *scribbler) Stream(ctx context.Context, req *model.Request) iter.Seq2[*model.Chunk, error] {
	b, err := json.Marshal(req.Collect())
	if err != nil {
		panic(err)
	}
	s.mu.Lock()
	s.shots = append(s.shots, string(b))
	s.mu.Unlock()
	next := s.Model.Stream(ctx, req)
	return func(yield func(*model.Chunk, error) bool) {
		for c, err := range next {
			if !yield(c, err) {
				break
			}
		}
		for _, m := range req.All() {
			m.Content, m.Role, m.FromHistory = "scribbled", model.RoleTool, false
			_ = m
		}
		_ = append(req.Messages, model.Message{Role: model.RoleUser, Content: "appended"})
	}
}

// A model that writes over the messages it reads from a request (and
// appends to its Messages) changes neither the session nor a later turn's
// request: each turn's history is what the earlier turns said, although
// every request shares the history cache's messages.
func TestHistory_AModelWritingOverItsRequestChangesNoLaterTurn(t *testing.T) {
	t.Parallel()
	for _, history := range []int{3, 30} {
		t.Run(fmt.Sprintf("history=%d", history), func(t *testing.T) {
			t.Parallel()
			s := &scribbler{Model: script(t, scripted.Turn{Content: "Noted."})}
			store := db.New("", memory.New())
			a := mustAgent(t, Config{Name: "Scribble", DB: store, AddHistoryToContext: true,
				NumHistoryRuns: history, Model: s})
			ctx := context.Background()
			const turns = 6
			for i := range turns {
				if _, err := a.Run(ctx, run.TextInput(fmt.Sprintf("turn %d", i)), WithSessionID("s")); err != nil {
					t.Fatal(err)
				}
			}
			s.mu.Lock()
			defer s.mu.Unlock()
			if len(s.shots) != turns {
				t.Fatalf("%d model calls, want %d", len(s.shots), turns)
			}
			for i, shot := range s.shots {
				var msgs []model.Message
				if err := json.Unmarshal([]byte(shot), &msgs); err != nil {
					t.Fatal(err)
				}
				var want []string
				for j := max(0, i-history); j < i; j++ {
					want = append(want, fmt.Sprintf("user:turn %d", j), "assistant:Noted.")
				}
				want = append(want, fmt.Sprintf("user:turn %d", i))
				var got []string
				for _, m := range msgs {
					got = append(got, string(m.Role)+":"+m.Content)
					if m.Content == "scribbled" || m.Content == "appended" {
						t.Errorf("request %d carries what the model wrote over an earlier request: %s", i, shot)
					}
				}
				if fmt.Sprint(got) != fmt.Sprint(want) {
					t.Errorf("request %d:\n got %v\nwant %v", i, got, want)
				}
				if n := countFromHistory(msgs); n != len(want)-1 {
					t.Errorf("request %d: %d messages from history, want %d", i, n, len(want)-1)
				}
			}
			runs, err := store.HistoryRuns(ctx, db.HistoryQuery{SessionID: "s", Limit: turns})
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range runs {
				if bytes.Contains(r.RunData, []byte("scribbled")) || bytes.Contains(r.RunData, []byte("appended")) {
					t.Errorf("stored run %s carries what the model wrote: %s", r.RunID, r.RunData)
				}
			}
		})
	}
}

// A reasoning model's system message put before the history (no
// instructions) or into the system message (instructions) leaves the run's
// own messages, the ones stored, without the history.
func TestHistory_ReasoningBeforeHistoryStoresOwnMessagesOnly(t *testing.T) {
	t.Parallel()
	for _, instructions := range []Instructions{nil, {"Answer."}} {
		t.Run(fmt.Sprintf("instructions=%d", len(instructions)), func(t *testing.T) {
			t.Parallel()
			reasoner := script(t, scripted.Turn{Reasoning: "think", Content: "ok"})
			a := mustAgent(t, Config{Model: scripted.Reply("Noted."), ReasoningModel: reasoner, Instructions: instructions,
				DB: db.New("", memory.New()), AddHistoryToContext: true})
			ctx := context.Background()
			var out *run.Output
			for _, in := range []string{"first", "second"} {
				var err error
				if out, err = a.Run(ctx, run.TextInput(in), WithSessionID("s")); err != nil {
					t.Fatal(err)
				}
			}
			var got []string
			for _, m := range out.Messages {
				got = append(got, string(m.Role)+":"+m.Content)
				if m.FromHistory {
					t.Errorf("stored message from history: %+v", m)
				}
			}
			if len(got) != 3 || out.Messages[0].Role != model.RoleSystem || !strings.Contains(out.Messages[0].Content, "<reasoning>") ||
				got[1] != "user:second" || got[2] != "assistant:Noted." {
				t.Fatalf("stored messages %q", got)
			}
		})
	}
}
