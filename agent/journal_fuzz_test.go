package agent

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/memory"
	"github.com/agentryhq/agentry/model/scripted"
	"github.com/agentryhq/agentry/run"
	"github.com/agentryhq/agentry/tool"
)

// FuzzJournal_RecordedStepsDecodeOrFail: whatever a journal holds for a
// run's model and tool steps (an older version's layout, a damaged row), the
// resumed run ends in a status, never a panic or an endless loop.
func FuzzJournal_RecordedStepsDecodeOrFail(f *testing.F) {
	f.Add([]byte(`{"response":{"message":{"role":"assistant","tool_calls":[{"id":"c1","name":"ping","arguments":"{}"}]}},"model":{"id":"x"}}`),
		[]byte(`{"content":"pong","duration":0.1}`))
	f.Add([]byte(`{"response":null}`), []byte(`null`))
	f.Add([]byte(`"text"`), []byte(`{"nested":[{"tool_call_id":1}]}`))
	f.Add([]byte(`{"response":{"message":{"content":"hi"},"usage":{"input_tokens":-5}}}`), []byte(`[]`))
	f.Fuzz(func(t *testing.T, modelRes, toolRes []byte) {
		if !json.Valid(modelRes) || !json.Valid(toolRes) {
			return // the journal stores what a step returned: always JSON
		}
		// A run that loops on a damaged step is a failure, not a hung fuzzer.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		d := db.New("", memory.New())
		defer d.Close()
		jd := d.Driver().(db.StepJournalDriver)
		for key, res := range map[string][]byte{"model:1": modelRes, "tool:c1": toolRes} {
			if err := jd.FinishStep(ctx, &db.RunStep{RunID: "r", StepKey: key, Kind: "x", Attempt: 1, Result: res}); err != nil {
				t.Fatal(err)
			}
		}
		j, err := db.NewJournal(d)
		if err != nil {
			t.Fatal(err)
		}
		ping := funcTool("ping", tool.FuncConfig{}, func(context.Context) (string, error) { return "pong", nil })
		a, err := New(Config{ID: "fz", Model: script(t, scripted.Turn{Content: "done"}), Tools: []tool.Tool{ping}})
		if err != nil {
			t.Fatal(err)
		}
		out, _ := a.Run(ctx, run.TextInput("go"), WithRunID("r"), WithJournal(j, 2))
		if out == nil || out.Status == "" {
			t.Fatalf("no run output: %+v", out)
		}
		if ctx.Err() != nil {
			t.Fatalf("the resumed run did not end within 10 s (status %s)", out.Status)
		}
	})
}
