package agent

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/dbtest/testdbs"
	"github.com/agentryhq/agentry/embedder/local"
	"github.com/agentryhq/agentry/knowledge"
	"github.com/agentryhq/agentry/model"
	"github.com/agentryhq/agentry/model/scripted"
	"github.com/agentryhq/agentry/run"
	"github.com/agentryhq/agentry/vectordb/embedded"
)

func knowledgeBase(t *testing.T, d *db.DB) *knowledge.Knowledge {
	t.Helper()
	e := local.New(local.Config{Dimensions: 64})
	vs, err := embedded.Open(context.Background(), embedded.Config{Path: filepath.Join(t.TempDir(), "v.db"), Dimensions: 64, EmbedderID: e.ID()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { vs.Close() })
	k, err := knowledge.New(knowledge.Config{Name: "kb", DB: d, Vectors: vs, Embedder: e})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, c := range []struct{ user, text string }{
		{"alice", "Alice's notes: the Mars rover landed in Jezero crater."},
		{"bob", "Bob's secret: the Mars launch code is 1234."},
		{"", "Shared handbook: Mars has two moons, Phobos and Deimos."},
	} {
		if _, err := k.Insert(ctx, knowledge.Content{Text: c.text, UserID: c.user}); err != nil {
			t.Fatal(err)
		}
	}
	return k
}

func refsOf(t *testing.T, raw json.RawMessage) []messageReferences {
	t.Helper()
	var refs []messageReferences
	if err := json.Unmarshal(raw, &refs); err != nil {
		t.Fatalf("references %s: %v", raw, err)
	}
	return refs
}

func TestSearchKnowledge_ToolFindsTheUsersAndSharedContentAndRecordsReferences(t *testing.T) {
	t.Parallel()
	d := testdbs.SQLite(t)
	a := mustAgent(t, Config{DB: d, Knowledge: knowledgeBase(t, d), SearchKnowledge: true, Model: script(t,
		scripted.Turn{ToolCalls: []scripted.ToolCall{{Name: SearchKnowledgeToolName, Args: map[string]any{"query": "mars"}}}},
		scripted.Turn{Content: "done"})})
	out, err := a.Run(context.Background(), run.TextInput("tell me about mars"), WithUserID("alice"))
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Tools) != 1 || !strings.Contains(out.Tools[0].Result, "Jezero") || strings.Contains(out.Tools[0].Result, "1234") {
		t.Fatalf("tool result %+v", out.Tools)
	}
	refs := refsOf(t, out.References)
	if len(refs) != 1 || refs[0].Query != "mars" || len(refs[0].References) != 2 {
		t.Fatalf("references %s", out.References)
	}
	for _, r := range refs[0].References {
		if _, ok := r["content"]; !ok {
			t.Fatalf("reference without content: %v", r)
		}
	}
	stored, err := d.GetRun(context.Background(), out.RunID)
	if err != nil {
		t.Fatal(err)
	}
	var data map[string]json.RawMessage
	json.Unmarshal(stored.RunData, &data)
	if !strings.Contains(string(data["references"]), "Jezero") {
		t.Fatalf("stored run lacks references: %s", data["references"])
	}
}

func TestSearchKnowledge_RunWithoutUserSeesSharedOnly(t *testing.T) {
	t.Parallel()
	d := testdbs.SQLite(t)
	a := mustAgent(t, Config{DB: d, Knowledge: knowledgeBase(t, d), SearchKnowledge: true, Model: script(t,
		scripted.Turn{ToolCalls: []scripted.ToolCall{{Name: SearchKnowledgeToolName, Args: map[string]any{"query": "mars"}}}},
		scripted.Turn{Content: "done"})})
	out, err := a.Run(context.Background(), run.TextInput("mars?"))
	if err != nil {
		t.Fatal(err)
	}
	if r := out.Tools[0].Result; !strings.Contains(r, "Phobos") || strings.Contains(r, "Jezero") || strings.Contains(r, "1234") {
		t.Fatalf("anonymous run saw %s", r)
	}
}

func TestAddKnowledgeToContext_ReferencesInTheUserMessage(t *testing.T) {
	t.Parallel()
	d := testdbs.SQLite(t)
	var seen string
	m := &recorder{Model: script(t, scripted.Turn{Content: "ok"})}
	a := mustAgent(t, Config{DB: d, Knowledge: knowledgeBase(t, d), AddKnowledgeToContext: true,
		KnowledgeFilters: map[string]any{"chunk": 1}, Model: m})
	out, err := a.Run(context.Background(), run.TextInput("mars moons"), WithUserID("bob"))
	if err != nil {
		t.Fatal(err)
	}
	reqs := m.requests()
	for _, msg := range reqs[len(reqs)-1] {
		if msg.Role == model.RoleUser {
			seen = msg.Content
		}
	}
	if !strings.Contains(seen, "<references>") || !strings.Contains(seen, "Phobos") || strings.Contains(seen, "Jezero") {
		t.Fatalf("user message %q", seen)
	}
	if refs := refsOf(t, out.References); len(refs) != 1 || refs[0].Query != "mars moons" {
		t.Fatalf("references %s", out.References)
	}
}

func TestNew_KnowledgeOptionsNeedAKnowledgeBase(t *testing.T) {
	t.Parallel()
	for _, cfg := range []Config{{SearchKnowledge: true}, {AddKnowledgeToContext: true}, {KnowledgeFilters: map[string]any{"a": 1}}} {
		cfg.Model = scripted.Reply("x")
		if _, err := New(cfg); err == nil {
			t.Fatalf("accepted %+v without Knowledge", cfg)
		}
	}
}
