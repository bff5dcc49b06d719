package main

import (
	"encoding/json"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestServe_CodeModeRecordsEveryToolCallMadeFromCode serves an agent with
// code_mode from a config file: the scripted model writes one cell that
// calls a tool twice in parallel and once more with their results. The
// stored run shows the three calls and the execute that made them; a
// hostile cell is aborted and the server goes on; variables survive a
// restart of the server, and another user cannot reach them.
func TestServe_CodeModeRecordsEveryToolCallMadeFromCode(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	script := writeFile(t, "analyst.yaml", `turns:
  - match: compute
    tool_calls:
      - name: execute
        args:
          code: |
            const [sum, product] = await Promise.all([
              calculator({op: "add", a: 2, b: 3}),
              calculator({op: "multiply", a: 4, b: 5}),
            ])
            const total = await calculator({op: "add", a: sum, b: product})
            total
  - match: compute
    content: computed
  - match: spin
    tool_calls:
      - name: execute
        args: {code: "while (true) {}"}
  - match: spin
    content: spun
  - match: recall
    tool_calls:
      - name: execute
        args: {code: "total * 2"}
  - match: recall
    content: recalled
`)
	cfg := writeFile(t, "agentos.yaml", `agents:
  - id: analyst
    model: scripted:`+script+`
    tools: [calculator]
    code_mode:
      persist: true
      cpu_time_limit: 200ms
`)
	dbPath := filepath.Join(dir, "a.db")
	args := []string{"--config", cfg, "--port", "0", "--db", dbPath, "--data-dir", filepath.Join(dir, "d")}
	base, stop := startServe(t, args...)

	if tools := getJSON[map[string]any](t, base+"/agents/analyst")["tools"]; !strings.Contains(jsonString(tools), `"execute"`) || strings.Contains(jsonString(tools), `"calculator"`) {
		t.Errorf("the model's tools = %s, want execute (and restart) only", jsonString(tools))
	}
	form := func(msg, user string) url.Values {
		return url.Values{"message": {msg}, "stream": {"false"}, "session_id": {"s1"}, "user_id": {user}}
	}
	status, out := postRun(t, base, "analyst", form("compute", "alice"))
	if status != 200 || out["status"] != "COMPLETED" || out["content"] != "computed" {
		t.Fatalf("run = %d %v", status, out)
	}
	stored := getJSON[map[string]any](t, base+"/sessions/s1/runs/"+out["run_id"].(string))
	var names, args2 []string
	var cell map[string]any
	for _, x := range stored["tools"].([]any) {
		ex := x.(map[string]any)
		names = append(names, ex["tool_name"].(string))
		if ex["tool_name"] == "execute" {
			if err := json.Unmarshal([]byte(ex["result"].(string)), &cell); err != nil {
				t.Fatal(err)
			}
		} else {
			args2 = append(args2, jsonString(ex["tool_args"])+"="+ex["result"].(string))
		}
	}
	if strings.Join(names, " ") != "calculator calculator calculator execute" {
		t.Fatalf("stored tools = %v, want three calculator calls and one execute", names)
	}
	slices.Sort(args2[:2])
	if strings.Join(args2, " ") != `{"a":2,"b":3,"op":"add"}=5 {"a":4,"b":5,"op":"multiply"}=20 {"a":5,"b":20,"op":"add"}=25` {
		t.Errorf("calls = %v", args2)
	}
	if cell["status"] != "ok" || cell["result"] != float64(25) {
		t.Errorf("cell = %v", cell)
	}

	// A hostile cell is aborted; the server and the session go on.
	status, out = postRun(t, base, "analyst", form("spin", "alice"))
	if status != 200 || out["status"] != "COMPLETED" || !strings.Contains(jsonString(out["tools"]), `\"reason\":\"cpu_time\"`) {
		t.Fatalf("hostile run = %d %v", status, jsonString(out["tools"]))
	}

	// The variable survives a restart of the server; another user is refused.
	if code, logs := stop(); code != 0 {
		t.Fatalf("exit %d: %s", code, logs)
	}
	base, stop = startServe(t, args...)
	status, out = postRun(t, base, "analyst", form("recall", "alice"))
	if status != 200 || !strings.Contains(jsonString(out["tools"]), `\"result\":50`) {
		t.Fatalf("after restart = %d %s", status, jsonString(out["tools"]))
	}
	// Another user's run in alice's session is refused before it runs (it
	// could not be stored: the session is alice's); codemode's own refusal of
	// a foreign snapshot is codemode's TestPersist_AnotherUsersStateIsNeverLoaded.
	status, out = postRun(t, base, "analyst", form("recall", "mallory"))
	if status != 409 || !strings.Contains(jsonString(out["detail"]), "belongs to another user") {
		t.Fatalf("another user = %d %s", status, jsonString(out))
	}
	if code, logs := stop(); code != 0 {
		t.Errorf("exit %d: %s", code, logs)
	}
}

func jsonString(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
