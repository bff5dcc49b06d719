package workflow

import (
	"context"
	"reflect"
	"testing"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/model/scripted"
	"github.com/agentryhq/agentry/run"
)

// A workflow run's metadata is resolved as an agent's and a team's are
// (docs/adr/run-metadata-precedence.md): the call's with the workflow's
// Config.Metadata merged over it, recursively, the workflow winning a
// conflict. Neither map given is changed.
func TestRun_WorkflowMetadataMergedOverTheCallsAsAgentsAndTeams(t *testing.T) {
	t.Parallel()
	d := openDB(t)
	own := map[string]any{"env": "prod", "tags": map[string]any{"owner": "ops"}}
	wf := mustNew(t, Config{ID: "md", DB: d, Metadata: own, Steps: []Step{{Name: "only", Runner: newAgent(t, "a", scripted.Reply("done"), d)}}})
	call := map[string]any{"env": "dev", "tags": map[string]any{"team": "search"}, "ticket": "T-1"}
	out, err := wf.Run(context.Background(), run.TextInput("go"), agent.WithSessionID("s1"), agent.WithMetadata(call))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"env": "prod", "tags": map[string]any{"owner": "ops", "team": "search"}, "ticket": "T-1"}
	if !reflect.DeepEqual(out.Metadata, want) {
		t.Errorf("run metadata %v; want %v", out.Metadata, want)
	}
	stored, err := d.GetRun(context.Background(), out.RunID)
	if err != nil {
		t.Fatal(err)
	}
	got, err := stored.Output()
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Metadata, want) {
		t.Errorf("stored metadata %v; want %v", got.Metadata, want)
	}
	if !reflect.DeepEqual(call, map[string]any{"env": "dev", "tags": map[string]any{"team": "search"}, "ticket": "T-1"}) ||
		!reflect.DeepEqual(own, map[string]any{"env": "prod", "tags": map[string]any{"owner": "ops"}}) {
		t.Errorf("the merge changed a map given: call %v, config %v", call, own)
	}
}
