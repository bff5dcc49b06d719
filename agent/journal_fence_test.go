package agent

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/dbtest/testdbs"
	"github.com/agentryhq/agentry/model/scripted"
	"github.com/agentryhq/agentry/run"
	"github.com/agentryhq/agentry/tool"
)

// TestJournal_FenceCheckAndSaveAreOneTransaction: a newer attempt that
// takes the run over after the stale attempt began its final save (here:
// in BeforeStore, which runs between the stale attempt's last check and its
// write) still fences the stale save off, on every SQL driver: the attempt
// check runs inside the save's transaction.
func TestJournal_FenceCheckAndSaveAreOneTransaction(t *testing.T) {
	for name, open := range map[string]testdbs.Opener{"sqlite": testdbs.SQLite, "postgres": testdbs.Postgres, "mysql": testdbs.MySQL} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			d := open(t)
			j, err := db.NewJournal(d)
			if err != nil {
				t.Fatal(err)
			}
			var tookOver atomic.Bool
			hook := func(ctx context.Context, out *run.Output) {
				if out.Status.InHistory() && tookOver.CompareAndSwap(false, true) {
					// Attempt 2 claims the run now, between the stale
					// attempt's fence check and its save.
					if err := j.Fence(context.WithoutCancel(ctx), out.RunID, 2); err != nil {
						t.Errorf("attempt 2 claims the run: %v", err)
					}
				}
			}
			// The subtests run at once in this process, whose run registry
			// refuses a second run with an id already executing: one id each.
			runID := "run-gap-" + name
			stale := mustAgent(t, Config{ID: "durable", DB: d, Model: script(t, scripted.Turn{Content: "stale attempt"}), BeforeStore: hook})
			_, err = stale.Run(context.Background(), run.TextInput("q"), WithRunID(runID), WithSessionID("s-gap"), WithJournal(j, 1))
			if !tookOver.Load() {
				t.Fatalf("the hook never ran (the run ended with %v): the test checks nothing", err)
			}
			if !errors.Is(err, run.ErrFenced) {
				t.Fatalf("stale attempt: %v, want run.ErrFenced", err)
			}
			if got, err := d.GetRun(context.Background(), runID); err == nil && got.Status == run.StatusCompleted {
				t.Fatalf("the superseded attempt's save landed: %s", got.Status)
			}
		})
	}
}

// TestJournal_ModelStepIsRecordedBeforeItsToolsAndNotWhenLast: a model call
// whose tool calls the run executes is recorded before the first tool runs;
// the run's last model call (an answer without tools) is not written: the
// run's final save records it.
func TestJournal_ModelStepIsRecordedBeforeItsToolsAndNotWhenLast(t *testing.T) {
	t.Parallel()
	d, j := openJournalDB(t, filepath.Join(t.TempDir(), "agentry.db"))
	defer d.Close()
	var atTool []string
	probe := funcTool("probe", tool.FuncConfig{}, func(ctx context.Context) (string, error) {
		steps, err := j.Steps(ctx, "run-lazy")
		if err != nil {
			return "", err
		}
		for _, s := range steps {
			atTool = append(atTool, s.StepKey+"="+s.Status)
		}
		return "probed", nil
	})
	a := mustAgent(t, Config{ID: "durable", DB: d, Tools: []tool.Tool{probe}, Model: script(t,
		scripted.Turn{ToolCalls: []scripted.ToolCall{{ID: "p1", Name: "probe"}}},
		scripted.Turn{Content: "done"})})
	if _, err := a.Run(context.Background(), run.TextInput("q"), WithRunID("run-lazy"), WithSessionID("s-1"), WithJournal(j, 1)); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(atTool, "model:1="+db.StepDone) {
		t.Fatalf("steps recorded when the tool ran: %v, want model:1 done", atTool)
	}
	steps, err := j.Steps(context.Background(), "run-lazy")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range steps {
		if s.StepKey == "model:2" {
			t.Fatalf("the run's last model call was written to the journal: %+v", s)
		}
	}
	if got := storedRun(t, d, "run-lazy"); got.Status != run.StatusCompleted || got.Content != "done" {
		t.Fatalf("stored run: %s %q", got.Status, got.Content)
	}
}
