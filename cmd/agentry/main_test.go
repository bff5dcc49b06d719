package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/db/sqlite"
)

// cli runs the CLI in-process and returns its exit code, stdout and stderr.
func cli(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := execute(context.Background(), args, strings.NewReader(""), &out, &errOut)
	return code, out.String(), errOut.String()
}

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

const script = `turns:
  - match: times
    tool_calls:
      - name: calculator
        args: {a: 6, b: 7, op: multiply}
  - match: times
    content: six times seven is 42
  - content: hello from the script
`

func TestVersion_PrintsName(t *testing.T) {
	t.Parallel()
	code, out, _ := cli(t, "version")
	if code != 0 || !strings.HasPrefix(out, "agentry ") {
		t.Fatalf("code %d out %q", code, out)
	}
}

func TestRun_ScriptedStreamsAnswer(t *testing.T) {
	t.Parallel()
	s := writeFile(t, "s.yaml", script)
	code, out, errOut := cli(t, "run", "--model", "scripted:"+s, "hello")
	if code != 0 || strings.TrimSpace(out) != "hello from the script" {
		t.Fatalf("code %d out %q err %q", code, out, errOut)
	}
}

func TestRun_ToolCallStoredAndListed(t *testing.T) {
	t.Parallel()
	s := writeFile(t, "s.yaml", script)
	dbPath := filepath.Join(t.TempDir(), "a.db")
	code, out, errOut := cli(t, "run", "--model", "scripted:"+s, "--tool", "calculator", "--db", dbPath, "--session", "s1", "what is 6 times 7")
	if code != 0 || strings.TrimSpace(out) != "six times seven is 42" || !strings.Contains(errOut, "calculator(") {
		t.Fatalf("code %d out %q err %q", code, out, errOut)
	}
	code, out, errOut = cli(t, "runs", "list", "--db", dbPath, "--session", "s1", "--limit", "10", "--json")
	if code != 0 {
		t.Fatalf("runs list: %d %s", code, errOut)
	}
	var runs []map[string]any
	if err := json.Unmarshal([]byte(out), &runs); err != nil || len(runs) != 1 {
		t.Fatalf("runs = %s (%v)", out, err)
	}
	if runs[0]["status"] != "COMPLETED" || runs[0]["content"] != "six times seven is 42" {
		t.Fatalf("run = %v", runs[0])
	}
	id, _ := runs[0]["run_id"].(string)
	code, out, _ = cli(t, "runs", "get", "--db", dbPath, id)
	if code != 0 || !strings.Contains(out, `"tool_name": "calculator"`) {
		t.Fatalf("runs get: %d %s", code, out)
	}
	if code, _, errOut = cli(t, "runs", "get", "--db", dbPath, "missing"); code == 0 || !strings.Contains(errOut, "not found") {
		t.Fatalf("missing run: %d %s", code, errOut)
	}
}

func TestRunsList_RejectsBadFilters(t *testing.T) {
	t.Parallel()
	dbPath := filepath.Join(t.TempDir(), "a.db")
	store, err := sqlite.Open(context.Background(), sqlite.Config{Path: dbPath}) // the filters, not a missing file, must fail
	if err != nil {
		t.Fatal(err)
	}
	store.Close()
	for _, args := range [][]string{
		{"--limit", "0"},
		{"--limit", "5", "--page", "0"},
		{"--limit", "5", "--status", "DONE"},
		{"--limit", "5", "--sort-by", "run_data; drop table agno_runs"},
	} {
		code, _, errOut := cli(t, append([]string{"runs", "list", "--db", dbPath}, args...)...)
		if code == 0 || errOut == "" {
			t.Errorf("runs list %v: code %d, stderr %q; want an error", args, code, errOut)
		}
	}
}

func TestRun_AgentFileWithRenamedKeyFails(t *testing.T) {
	t.Parallel()
	for key, want := range map[string]string{
		"enable_user_memories: true":   "update_memory_on_run",
		"search_session_history: true": "search_past_sessions",
		"num_history_sessions: 2":      "num_past_sessions_to_search",
		"reasoning: true":              "reasoning_model",
	} {
		f := writeFile(t, "agent.yaml", "model: scripted:x.yaml\n"+key+"\n")
		code, _, errOut := cli(t, "run", "--config", f, "hi")
		if code == 0 || !strings.Contains(errOut, want) {
			t.Errorf("%s: code %d stderr %q, want it to name %s", key, code, errOut, want)
		}
	}
}

func TestRun_AgentFileJSON(t *testing.T) {
	t.Parallel()
	s := writeFile(t, "s.yaml", script)
	f := writeFile(t, "agent.json", `{"id": "calc", "model": "scripted:`+s+`", "tools": ["calculator"], "instructions": ["Be brief."]}`)
	code, out, errOut := cli(t, "run", "--config", f, "--json", "what is 6 times 7")
	if code != 0 {
		t.Fatalf("code %d err %s", code, errOut)
	}
	var o map[string]any
	if err := json.Unmarshal([]byte(out), &o); err != nil || o["agent_id"] != "calc" || o["content"] != "six times seven is 42" {
		t.Fatalf("output %s (%v)", out, err)
	}
}

func TestRun_Errors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no model", []string{"run", "hi"}, "no model"},
		{"bad spec", []string{"run", "--model", "gpt4", "hi"}, "provider:model"},
		{"unknown tool", []string{"run", "--model", "scripted:" + writeFile(t, "s.yaml", script), "--tool", "duckduckgo_search", "hi"}, "unknown tool"},
		{"unknown key", []string{"run", "--config", writeFile(t, "a.yaml", "model: openai:x\nmodle: y\n"), "hi"}, "modle"},
		{"not sqlite", []string{"run", "--model", "scripted:" + writeFile(t, "s2.yaml", script), "--db", writeFile(t, "bad.db", strings.Repeat("not a database ", 500)), "hi"}, "not"},
	}
	for _, tc := range tests {
		code, _, errOut := cli(t, tc.args...)
		if code == 0 || !strings.Contains(strings.ToLower(errOut), tc.want) {
			t.Errorf("%s: code %d stderr %q, want it to contain %q", tc.name, code, errOut, tc.want)
		}
	}
}

// Settings that store in the database, in an agent file run without --db,
// failed naming Go fields ("need Config.DB"); knowledge: true named the
// made-up id cli-agent and BuildOptions.Knowledge. Each names its key and
// what to do.
func TestRun_AgentFileSettingsThatNeedTheDatabaseNameTheKeyAndDB(t *testing.T) {
	t.Parallel()
	s := writeFile(t, "s.yaml", script)
	for setting, want := range map[string]string{
		"update_memory_on_run: true":     "update_memory_on_run needs --db",
		"enable_agentic_memory: true":    "enable_agentic_memory needs --db",
		"enable_session_summaries: true": "enable_session_summaries needs --db",
		"search_past_sessions: true":     "search_past_sessions needs --db",
		"offload_tool_results: true":     "offload_tool_results needs --db",
		"knowledge: true":                "knowledge: true needs the server's knowledge base: serve the agent with agentry serve",
	} {
		f := writeFile(t, "agent.yaml", "model: scripted:"+s+"\n"+setting+"\n")
		code, out, errOut := cli(t, "run", "--config", f, "hello")
		if code != 1 || out != "" || !strings.Contains(errOut, want) || strings.Contains(errOut, "Config.DB") || strings.Contains(errOut, "cli-agent") {
			t.Errorf("%s: code %d out %q err %q, want %q", setting, code, out, errOut, want)
		}
	}
	// --session without --db continued nothing (no conversation is stored):
	// refused, naming --db.
	if code, out, errOut := cli(t, "run", "--model", "scripted:"+s, "--session", "s1", "hello"); code != 1 || out != "" ||
		!strings.Contains(errOut, "--session continues a stored conversation: pass --db too") {
		t.Errorf("--session without --db: code %d out %q err %q", code, out, errOut)
	}
	// With --db they work.
	f := writeFile(t, "agent.yaml", "model: scripted:"+s+"\nadd_history_to_context: true\noffload_tool_results: true\n")
	if code, out, errOut := cli(t, "run", "--config", f, "--db", filepath.Join(t.TempDir(), "a.db"), "hello"); code != 0 {
		t.Fatalf("with --db: code %d out %q err %q", code, out, errOut)
	}
}
