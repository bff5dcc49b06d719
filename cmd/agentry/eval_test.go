package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/dsn"
)

func TestEval_ExampleSuitePassesAndStoresRuns(t *testing.T) {
	t.Parallel()
	dbPath := filepath.Join(t.TempDir(), "evals.db")
	code, out, errOut := cli(t, "eval", "--config", "../../examples/offline.yaml", "--db", dbPath, "--user", "ci", "../../examples/offline.evals.yaml")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	for _, want := range []string{"multiplies", "accuracy", "PASS", "4/4 passed"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	store, err := openStore(context.Background(), dbPath, dsn.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	rows, total, err := store.ListEvalRuns(db.WithUserScope(context.Background(), "ci"), db.EvalFilter{Limit: 10, Page: 1})
	if err != nil || total != 4 {
		t.Fatalf("stored %d eval runs (%v), want 4", total, err)
	}
	types := map[string]bool{}
	for _, r := range rows {
		types[r.EvalType] = true
		if r.AgentID != "echo" || r.UserID != "ci" || !strings.Contains(out, r.RunID) {
			t.Errorf("row %+v", r)
		}
	}
	if len(types) != 4 {
		t.Errorf("eval types stored: %v", types)
	}
}

func TestEval_FailingCaseExitsTwo(t *testing.T) {
	t.Parallel()
	judge := writeFile(t, "judge.yaml", "turns:\n  - content: '{\"accuracy_score\": 3, \"accuracy_reason\": \"wrong\"}'\n")
	cases := writeFile(t, "cases.yaml", `judge_model: scripted:`+judge+`
cases:
  - {name: wrong tool, type: reliability, agent: echo, input: "what is 6 times 7?", expected_tool_calls: [web_search]}
  - {name: low score, type: accuracy, agent: echo, input: hi, expected_output: "42"}
  - {name: passes, type: reliability, agent: echo, input: hi, forbidden_tool_calls: [calculator]}
  - {name: missing agent, type: reliability, agent: nobody, input: hi, expected_tool_calls: [calculator]}
`)
	code, out, errOut := cli(t, "eval", "--config", "../../examples/offline.yaml", "--json", cases)
	if code != exitEvalFailed || !strings.Contains(errOut, "3 of 4 eval cases failed") {
		t.Fatalf("exit %d, stderr %s", code, errOut)
	}
	var results []struct {
		Name   string
		Passed bool
		Error  string
		Result map[string]any
	}
	if err := json.Unmarshal([]byte(out), &results); err != nil {
		t.Fatalf("--json output: %v\n%s", err, out)
	}
	got := map[string]bool{}
	for _, r := range results {
		got[r.Name] = r.Passed
	}
	if len(results) != 4 || got["wrong tool"] || got["low score"] || !got["passes"] || got["missing agent"] {
		t.Errorf("results %s", out)
	}
	if results[0].Result["eval_status"] != "FAILED" || !strings.Contains(results[3].Error, `no agent "nobody"`) {
		t.Errorf("results %s", out)
	}
}

func TestEval_BadInputExitsOne(t *testing.T) {
	t.Parallel()
	for name, c := range map[string]struct{ file, config, want string }{
		"unknown key":   {"cases:\n  - {name: a, type: reliability, agent: echo, input: hi, expectd: x}\n", "../../examples/offline.yaml", "expectd"},
		"bad type":      {"cases:\n  - {name: a, type: vibes, agent: echo, input: hi}\n", "../../examples/offline.yaml", "vibes"},
		"no judge":      {"cases:\n  - {name: a, type: accuracy, agent: echo, input: hi, expected_output: x}\n", "../../examples/offline.yaml", "judge_model"},
		"no cases":      {"cases: []\n", "../../examples/offline.yaml", "no cases"},
		"no config":     {"cases:\n  - {name: a, type: reliability, agent: echo, input: hi, expected_tool_calls: [calculator]}\n", "", "--config"},
		"two targets":   {"cases:\n  - {name: a, type: reliability, agent: echo, team: t, input: hi, expected_tool_calls: [calculator]}\n", "../../examples/offline.yaml", "exactly one"},
		"missing input": {"cases:\n  - {name: a, type: reliability, agent: echo, expected_tool_calls: [calculator]}\n", "../../examples/offline.yaml", "input is required"},
	} {
		args := []string{"eval", writeFile(t, "cases.yaml", c.file)}
		if c.config != "" {
			args = append(args, "--config", c.config)
		}
		code, _, errOut := cli(t, args...)
		if code != 1 || !strings.Contains(errOut, c.want) {
			t.Errorf("%s: exit %d, stderr %q; want 1 naming %q", name, code, errOut, c.want)
		}
	}
}
