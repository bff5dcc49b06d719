package agent

import (
	"context"
	"errors"
	"iter"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/memory"
	"github.com/agentryhq/agentry/db/sqlite"
	"github.com/agentryhq/agentry/model"
	"github.com/agentryhq/agentry/model/scripted"
	"github.com/agentryhq/agentry/run"
	"github.com/agentryhq/agentry/tool"
)

// countingModel counts the requests reaching the scripted model by turn
// position (assistant messages after the last user message).
type countingModel struct {
	*scripted.Model
	mu  sync.Mutex
	pos map[int]int
}

func (m *countingModel) count(req *model.Request) {
	k := 0
	for _, msg := range req.Backward() {
		if msg.Role == model.RoleUser {
			break
		}
		if msg.Role == model.RoleAssistant {
			k++
		}
	}
	m.mu.Lock()
	m.pos[k]++
	m.mu.Unlock()
}

func (m *countingModel) Stream(ctx context.Context, req *model.Request) iter.Seq2[*model.Chunk, error] {
	m.count(req)
	return m.Model.Stream(ctx, req)
}

func (m *countingModel) Invoke(ctx context.Context, req *model.Request) (*model.Response, error) {
	m.count(req)
	return m.Model.Invoke(ctx, req)
}

func journalScript(t *testing.T) *countingModel {
	return &countingModel{Model: script(t,
		scripted.Turn{ToolCalls: []scripted.ToolCall{{ID: "c1", Name: "charge"}}},
		scripted.Turn{ToolCalls: []scripted.ToolCall{{ID: "c2", Name: "ship"}}},
		scripted.Turn{Content: "all done"}), pos: map[int]int{}}
}

// crashFixture: "charge" counts its side effects; "ship" blocks until the
// run's context ends the first time (the crash), then counts.
type crashFixture struct {
	charges, ships atomic.Int32
	keys           sync.Map // attempt → ship's idempotency key
	crashed        chan struct{}
	crash          atomic.Bool
}

func (f *crashFixture) tools(shipCfg tool.FuncConfig) []tool.Tool {
	return []tool.Tool{
		funcTool("charge", tool.FuncConfig{}, func(context.Context) (string, error) {
			return "charged", nil
		}),
		funcTool("ship", shipCfg, func(ctx context.Context) (string, error) {
			if f.crash.CompareAndSwap(true, false) {
				f.keys.Store(1, run.IdempotencyKey(ctx))
				close(f.crashed)
				<-ctx.Done()
				return "", ctx.Err()
			}
			f.keys.Store(2, run.IdempotencyKey(ctx))
			f.ships.Add(1)
			return "shipped", nil
		}),
	}
}

func countingCharge(f *crashFixture, tools []tool.Tool) []tool.Tool {
	tools[0] = funcTool("charge", tool.FuncConfig{}, func(ctx context.Context) (string, error) {
		f.charges.Add(1)
		SetChildRunID(ctx, "payment-run") // a replay keeps it (the journal's step)
		return "charged", nil
	})
	return tools
}

func openJournalDB(t *testing.T, path string) (*db.DB, *db.Journal) {
	t.Helper()
	d, err := sqlite.Open(context.Background(), sqlite.Config{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	j, err := db.NewJournal(d)
	if err != nil {
		t.Fatal(err)
	}
	return d, j
}

// crashFirstAttempt runs attempt 1 until "ship" is executing, then cancels
// it (the crash) and closes the database.
func crashFirstAttempt(t *testing.T, runID, path string, m model.Model, f *crashFixture, shipCfg tool.FuncConfig) {
	t.Helper()
	d, j := openJournalDB(t, path)
	a := mustAgent(t, Config{ID: "durable", DB: d, Model: m, Tools: countingCharge(f, f.tools(shipCfg))})
	ctx, cancel := context.WithCancel(context.Background())
	f.crash.Store(true)
	go func() { <-f.crashed; cancel() }()
	_, err := a.Run(ctx, run.TextInput("order"), WithRunID(runID), WithSessionID("s-1"), WithJournal(j, 1))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("attempt 1: %v, want cancelled", err)
	}
	d.Close()
}

// TestJournal_ReplayAfterCrashRepeatsNothingCompleted: a run resumed after a
// crash with the same run id and attempt 2 asks the model nothing it already
// answered, does not repeat the completed tool call, re-runs the interrupted
// one with the same idempotency key, and ends as an uninterrupted run does.
func TestJournal_ReplayAfterCrashRepeatsNothingCompleted(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "agentry.db")
	m := journalScript(t)
	f := &crashFixture{crashed: make(chan struct{})}
	crashFirstAttempt(t, "run-replay", path, m, f, tool.FuncConfig{})
	if f.charges.Load() != 1 || f.ships.Load() != 0 {
		t.Fatalf("after the crash: charges %d ships %d, want 1 and 0", f.charges.Load(), f.ships.Load())
	}

	d, j := openJournalDB(t, path)
	defer d.Close()
	a := mustAgent(t, Config{ID: "durable", DB: d, Model: m, Tools: countingCharge(f, f.tools(tool.FuncConfig{}))})
	out, err := a.Run(context.Background(), run.TextInput("order"), WithRunID("run-replay"), WithSessionID("s-1"), WithJournal(j, 2))
	if err != nil {
		t.Fatal(err)
	}
	if f.charges.Load() != 1 {
		t.Errorf("charge executed %d times, want 1 (its result was recorded)", f.charges.Load())
	}
	for _, ex := range out.Tools {
		if ex.ToolName == "charge" && ex.ChildRunID != "payment-run" {
			t.Errorf("the replayed charge's child_run_id is %q, want the one its first attempt set", ex.ChildRunID)
		}
	}
	if f.ships.Load() != 1 {
		t.Errorf("ship completed %d times, want 1", f.ships.Load())
	}
	for k, n := range m.pos {
		if n != 1 {
			t.Errorf("model turn %d requested %d times, want once", k+1, n)
		}
	}
	k1, _ := f.keys.Load(1)
	k2, _ := f.keys.Load(2)
	if k1 == nil || k1 == "" || k1 != k2 {
		t.Errorf("idempotency keys of ship: attempt 1 %q, attempt 2 %q; want the same non-empty key", k1, k2)
	}

	// The same run without a crash.
	ref := mustAgent(t, Config{ID: "durable", DB: openSQLite(t), Model: journalScript(t), Tools: (&crashFixture{}).tools(tool.FuncConfig{})})
	want, err := ref.Run(context.Background(), run.TextInput("order"), WithRunID("run-replay"), WithSessionID("s-1"))
	if err != nil {
		t.Fatal(err)
	}
	if out.Content != want.Content || out.Status != want.Status {
		t.Errorf("replayed run: %v %q, uninterrupted: %v %q", out.Status, out.Content, want.Status, want.Content)
	}
	if len(out.Messages) != len(want.Messages) || len(out.Tools) != len(want.Tools) {
		t.Fatalf("replayed run has %d messages and %d tools, uninterrupted %d and %d", len(out.Messages), len(out.Tools), len(want.Messages), len(want.Tools))
	}
	for i := range out.Messages {
		g, w := out.Messages[i], want.Messages[i]
		if g.Role != w.Role || g.Content != w.Content || g.ToolCallID != w.ToolCallID || len(g.ToolCalls) != len(w.ToolCalls) {
			t.Errorf("message %d: replayed %s %q %q, uninterrupted %s %q %q", i, g.Role, g.Content, g.ToolCallID, w.Role, w.Content, w.ToolCallID)
		}
	}
	if stored := storedRun(t, d, "run-replay"); stored.Content != "all done" || stored.Status != run.StatusCompleted {
		t.Errorf("stored run: %v %q", stored.Status, stored.Content)
	}
}

// TestJournal_InterruptedNonIdempotentToolPausesForConfirmation: a crash
// inside a non-idempotent tool pauses the resumed run with a confirmation
// requirement for that call; confirming runs it again and the run ends.
func TestJournal_InterruptedNonIdempotentToolPausesForConfirmation(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "agentry.db")
	m := journalScript(t)
	f := &crashFixture{crashed: make(chan struct{})}
	cfg := tool.FuncConfig{NonIdempotent: true}
	crashFirstAttempt(t, "run-pause", path, m, f, cfg)

	d, j := openJournalDB(t, path)
	defer d.Close()
	a := mustAgent(t, Config{ID: "durable", DB: d, Model: m, Tools: countingCharge(f, f.tools(cfg))})
	out, err := a.Run(context.Background(), run.TextInput("order"), WithRunID("run-pause"), WithSessionID("s-1"), WithJournal(j, 2))
	if err != nil {
		t.Fatal(err)
	}
	if out.Status != run.StatusPaused || len(out.Requirements) != 1 {
		t.Fatalf("resumed run: %v with %d requirements, want PAUSED with 1", out.Status, len(out.Requirements))
	}
	r := out.Requirements[0]
	if r.ID != "c2" || r.Kind != "confirmation" || r.ToolExecution == nil || !r.ToolExecution.RequiresConfirmation || r.ToolExecution.ToolName != "ship" {
		t.Fatalf("requirement %+v", r)
	}
	if f.ships.Load() != 0 || f.charges.Load() != 1 {
		t.Fatalf("while paused: ships %d charges %d, want 0 and 1", f.ships.Load(), f.charges.Load())
	}
	stored := storedRun(t, d, "run-pause")
	if stored.Status != run.StatusPaused || len(stored.Requirements) != 1 {
		t.Fatalf("stored run: %v with %d requirements", stored.Status, len(stored.Requirements))
	}
	yes := true
	done, err := a.ContinueRunID(context.Background(), "run-pause", WithTools([]run.ToolExecution{{ToolCallID: "c2", Confirmed: &yes}}), WithJournal(j, 2))
	if err != nil {
		t.Fatal(err)
	}
	if done.Status != run.StatusCompleted || done.Content != "all done" || f.ships.Load() != 1 || f.charges.Load() != 1 {
		t.Fatalf("after confirming: %v %q, ships %d charges %d", done.Status, done.Content, f.ships.Load(), f.charges.Load())
	}
}

// TestJournal_SupersededAttemptDoesNotOverwriteTheRun: once attempt 2 has
// run, attempt 1 (a stale worker) fails with run.ErrFenced and the stored
// run stays attempt 2's.
func TestJournal_SupersededAttemptDoesNotOverwriteTheRun(t *testing.T) {
	t.Parallel()
	d, j := openJournalDB(t, filepath.Join(t.TempDir(), "agentry.db"))
	defer d.Close()
	a := mustAgent(t, Config{ID: "durable", DB: d, Model: script(t, scripted.Turn{Content: "new attempt"})})
	if _, err := a.Run(context.Background(), run.TextInput("q"), WithRunID("run-fence"), WithSessionID("s-1"), WithJournal(j, 2)); err != nil {
		t.Fatal(err)
	}
	stale := mustAgent(t, Config{ID: "durable", DB: d, Model: script(t, scripted.Turn{Content: "stale attempt"})})
	_, err := stale.Run(context.Background(), run.TextInput("q"), WithRunID("run-fence"), WithSessionID("s-1"), WithJournal(j, 1))
	if !errors.Is(err, run.ErrFenced) {
		t.Fatalf("stale attempt: %v, want run.ErrFenced", err)
	}
	if got := storedRun(t, d, "run-fence"); got.Status != run.StatusCompleted || got.Content != "new attempt" {
		t.Fatalf("stored run after the stale attempt: %v %q", got.Status, got.Content)
	}
}

// TestJournal_RecordedModelStepWithDamagedRoleReplaysOnce: a recorded model
// step whose message says a role other than the assistant's (a damaged row;
// found by FuzzJournal_RecordedStepsDecodeOrFail) is replayed once, its tool
// call once, and the run goes on to the next model call. The step's key
// counts assistant messages, so a replay that kept the role was replayed
// forever.
func TestJournal_RecordedModelStepWithDamagedRoleReplaysOnce(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	d := db.New("", memory.New())
	defer d.Close()
	jd := d.Driver().(db.StepJournalDriver)
	steps := map[string]string{
		"model:1": `{"response":{"message":{"role":"assist\ufffdant","tool_calls":[{"id":"c1","name":"ping","arguments":"{}"}]}},"model":{"id":"x"}}`,
		"tool:c1": `{"content":"pong","duration":0.1}`,
	}
	for key, res := range steps {
		if err := jd.FinishStep(ctx, &db.RunStep{RunID: "r", StepKey: key, Kind: "x", Attempt: 1, Result: []byte(res)}); err != nil {
			t.Fatal(err)
		}
	}
	j, err := db.NewJournal(d)
	if err != nil {
		t.Fatal(err)
	}
	var pings atomic.Int32
	ping := funcTool("ping", tool.FuncConfig{}, func(context.Context) (string, error) { pings.Add(1); return "pong", nil })
	m := script(t, scripted.Turn{Content: "done"})
	a := mustAgent(t, Config{ID: "dj", Model: m, Tools: []tool.Tool{ping}})
	out, err := a.Run(ctx, run.TextInput("go"), WithRunID("r"), WithJournal(j, 2))
	if err != nil || out.Status != run.StatusCompleted || out.Content != "done" {
		t.Fatalf("run: %v, status %s, content %q; want COMPLETED \"done\"", err, out.Status, out.Content)
	}
	if pings.Load() != 0 || len(out.Tools) != 1 || out.Tools[0].Result != "pong" {
		t.Fatalf("the recorded tool call ran %d times live and %d times in all; want replayed once", pings.Load(), len(out.Tools))
	}
	var assistants int
	for _, msg := range out.Messages {
		if msg.Role == model.RoleAssistant {
			assistants++
		}
	}
	if assistants != 2 {
		t.Fatalf("%d assistant messages, want 2 (the replayed call, the answer)", assistants)
	}
}
