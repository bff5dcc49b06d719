package agent_test

import (
	"context"
	"reflect"
	"testing"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/db/dbtest/testdbs"
	"github.com/agentryhq/agentry/run"
)

// A run's metadata is Agno's: the call's (WithMetadata) with the agent's
// Config.Metadata merged over it, into nested objects too, the agent's
// value winning a conflict; neither map given is changed.
func TestRun_AgentMetadataWinsOverTheCallsAndMergesNestedObjects(t *testing.T) {
	t.Parallel()
	d := testdbs.SQLite(t)
	configured := map[string]any{"env": "prod", "tags": map[string]any{"team": "ops"}}
	a, _ := confirmAgent(t, agent.Config{DB: d, Metadata: configured})
	given := map[string]any{"env": "dev", "request": "r1", "tags": map[string]any{"team": "web", "tier": "gold"}}
	out, err := a.Run(context.Background(), run.TextInput("hello"), agent.WithMetadata(given))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"env": "prod", "request": "r1", "tags": map[string]any{"team": "ops", "tier": "gold"}}
	if !reflect.DeepEqual(out.Metadata, want) {
		t.Errorf("run metadata %v, want %v", out.Metadata, want)
	}
	row, err := d.GetRun(context.Background(), out.RunID)
	if err != nil {
		t.Fatal(err)
	}
	stored, err := row.Output()
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(stored.Metadata, want) {
		t.Errorf("stored metadata %v, want %v", stored.Metadata, want)
	}
	if !reflect.DeepEqual(given, map[string]any{"env": "dev", "request": "r1", "tags": map[string]any{"team": "web", "tier": "gold"}}) {
		t.Errorf("the caller's metadata changed: %v", given)
	}
	if !reflect.DeepEqual(a.Config().Metadata, map[string]any{"env": "prod", "tags": map[string]any{"team": "ops"}}) {
		t.Errorf("the agent's metadata changed: %v", a.Config().Metadata)
	}
}

// A continued run keeps the metadata its run paused with; a continue's
// WithMetadata adds to it (the agent's still winning).
func TestContinueRun_KeepsThePausedRunsMetadata(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		opts []agent.RunOption
		want map[string]any
	}{
		{"no metadata given", nil, map[string]any{"env": "prod", "request": "r1"}},
		{"metadata given", []agent.RunOption{agent.WithMetadata(map[string]any{"step": "approved", "env": "dev"})},
			map[string]any{"env": "prod", "request": "r1", "step": "approved"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			a, _ := confirmAgent(t, agent.Config{Metadata: map[string]any{"env": "prod"}})
			paused, err := a.Run(context.Background(), run.TextInput("deploy it"), agent.WithMetadata(map[string]any{"request": "r1"}))
			if err != nil || paused.Status != run.StatusPaused {
				t.Fatalf("%v %v", err, paused)
			}
			paused.Requirements[0].ToolExecution.Confirmed = new(true)
			out, err := a.ContinueRun(context.Background(), paused, tc.opts...)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(out.Metadata, tc.want) {
				t.Errorf("continued run's metadata %v, want %v", out.Metadata, tc.want)
			}
			if !reflect.DeepEqual(paused.Metadata, map[string]any{"env": "prod", "request": "r1"}) {
				t.Errorf("the paused run's metadata changed: %v", paused.Metadata)
			}
		})
	}
}
