package config

import (
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/db/dbtest/testdbs"
)

func TestKnowledge_ConfigBuildsAgentsWithTheKnowledgeBase(t *testing.T) {
	t.Parallel()
	c, err := Parse([]byte(`
knowledge:
  name: docs
  max_bytes: 1MB
  search_type: keyword
agents:
  - id: helper
    model: ollama:llama3.2
    knowledge: true
    add_knowledge_to_context: true
    knowledge_filters: {lang: en}
`), "k.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	d := testdbs.SQLite(t)
	kb, done, err := OpenKnowledge(context.Background(), c.Knowledge, d, t.TempDir(), slog.Default())
	if err != nil {
		t.Fatal(err)
	}
	defer done()
	if kb.Name() != "docs" || kb.Config().MaxBytes != 1000*1000 || kb.Config().SearchMode != "keyword" {
		t.Fatalf("knowledge base %+v", kb.Config())
	}
	a, err := c.Agents[0].BuildWith(d, BuildOptions{Knowledge: kb})
	if err != nil || a.ID() != "helper" {
		t.Fatalf("agent: %v", err)
	}
}

func TestKnowledge_RefusedSettings(t *testing.T) {
	t.Parallel()
	cases := map[string]string{
		"knowledge: {vector_db: {type: pgvector}}":           "pgvector is not available",
		"knowledge: {embedder: {provider: cohere}}":          "use local or openai",
		"knowledge: {embedder: {provider: openai}}":          "needs model and dimensions",
		"knowledge: {search_type: semantic}":                 "use vector, keyword or hybrid",
		"knowledge: {allow_networks: [not-a-cidr]}":          "allow_networks",
		"knowledge: {name: 'has space'}":                     "knowledge.name",
		"knowledge: {embedder: {provider: local, model: x}}": "takes only dimensions",
	}
	for yaml, want := range cases {
		c, err := Parse([]byte(yaml), "k.yaml")
		if err == nil {
			err = c.Validate()
		}
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", yaml, err, want)
		}
	}
}

func TestKnowledge_AgentSettingsNeedKnowledgeTrue(t *testing.T) {
	t.Parallel()
	a := Agent{ID: "a", Model: Model{Spec: "ollama:llama3.2"}, AddKnowledgeToContext: true}
	if _, err := a.Build(nil); err == nil || !strings.Contains(err.Error(), "need knowledge: true") {
		t.Fatalf("err %v", err)
	}
	a = Agent{ID: "a", Model: Model{Spec: "ollama:llama3.2"}, Knowledge: true}
	if _, err := a.Build(nil); err == nil || !strings.Contains(err.Error(), "needs the server's knowledge base") {
		t.Fatalf("err %v", err)
	}
}
