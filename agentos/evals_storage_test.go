package agentos

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/db/sqlite"
	"github.com/agentryhq/agentry/model/scripted"
)

// An eval whose target could not use its database answers as every other
// storage failure does: 503 with the generic detail, never the database's
// own error (which may name its host and user). It answered 500 quoting it.
func TestEvalRuns_TargetStorageFailureIsA503WithoutTheDatabaseError(t *testing.T) {
	t.Parallel()
	f := newFixtureWith(t, Config{}, func(f *fixture, _ *agent.Agent, cfg *Config) {
		d, err := sqlite.Open(t.Context(), sqlite.Config{Path: filepath.Join(t.TempDir(), "target.db")})
		if err != nil {
			t.Fatal(err)
		}
		a, err := agent.New(agent.Config{ID: "broken", Name: "Broken", DB: d, Model: scripted.Reply("hi")})
		if err != nil {
			t.Fatal(err)
		}
		d.Close() // every read of the target's session now fails
		cfg.Agents = append(cfg.Agents, a)
	})
	res := do(t, "POST", f.url+"/eval-runs", strings.NewReader(`{"agent_id":"broken","eval_type":"performance","input":"q","num_iterations":1}`), jsonHeader)
	if res.status != 503 || !strings.Contains(res.body, detailDBUnavailable) || strings.Contains(res.body, "closed") {
		t.Fatalf("POST /eval-runs = %d %s", res.status, res.body)
	}
}
