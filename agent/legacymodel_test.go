package agent

import (
	"context"
	"fmt"
	"iter"
	"strings"
	"sync"
	"testing"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/memory"
	"github.com/agentryhq/agentry/model"
	"github.com/agentryhq/agentry/run"
)

// messagesOnlyModel reads Request.Messages alone, as a model written
// before Request.History did; it records what it was sent.
type messagesOnlyModel struct {
	mu   sync.Mutex
	sent [][]string
}

func (m *messagesOnlyModel) Info() model.Info {
	return model.Info{ID: "messages-only", Provider: "test"}
}

func (m *messagesOnlyModel) Invoke(ctx context.Context, req *model.Request) (*model.Response, error) {
	var acc model.Accumulator
	for c, err := range m.Stream(ctx, req) {
		if err != nil {
			return nil, err
		}
		acc.Add(c)
	}
	return acc.Response(), nil
}

func (m *messagesOnlyModel) Stream(_ context.Context, req *model.Request) iter.Seq2[*model.Chunk, error] {
	var texts []string
	for _, msg := range req.Messages {
		texts = append(texts, string(msg.Role)+":"+msg.Content)
	}
	m.mu.Lock()
	m.sent = append(m.sent, texts)
	m.mu.Unlock()
	return func(yield func(*model.Chunk, error) bool) {
		yield(&model.Chunk{Content: fmt.Sprintf("answer %d", len(texts))}, nil)
	}
}

// TestRun_AModelThatReadsMessagesAloneGetsTheWholeHistory: the agent shares
// its history through Request.History only with models that say they read
// it (model.HistoryReader); any other model gets it in Messages.
func TestRun_AModelThatReadsMessagesAloneGetsTheWholeHistory(t *testing.T) {
	t.Parallel()
	m := &messagesOnlyModel{}
	a := mustAgent(t, Config{Name: "Legacy", Instructions: Instructions{"Be terse."}, DB: db.New("", memory.New()),
		AddHistoryToContext: true, Model: m})
	for i := range 3 {
		if _, err := a.Run(context.Background(), run.TextInput(fmt.Sprintf("message %d", i)), WithSessionID("s")); err != nil {
			t.Fatal(err)
		}
	}
	last := m.sent[len(m.sent)-1]
	got := strings.Join(last, " | ")
	for _, want := range []string{"message 0", "message 1", "message 2", "answer"} {
		if !strings.Contains(got, want) {
			t.Fatalf("the third turn sent %q: %q is missing", got, want)
		}
	}
	if !strings.HasPrefix(last[0], "system:") {
		t.Fatalf("the third turn's first message is %q, want the system message", last[0])
	}
}
