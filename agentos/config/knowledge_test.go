package config

import (
	"context"
	"fmt"
	"time"

	"github.com/agentryhq/agentry/db"
	"log/slog"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/db/dbtest/testdbs"
	"github.com/agentryhq/agentry/knowledge"
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
	if err == nil {
		defer a.Close()
	}
	if err != nil || a.ID() != "helper" {
		t.Fatalf("agent: %v", err)
	}
}

func TestKnowledge_RefusedSettings(t *testing.T) {
	t.Parallel()
	cases := map[string]string{
		"knowledge: {vector_db: {type: pgvector, path: x}}":  "not path",
		"knowledge: {vector_db: {type: chroma}}":             "use embedded or pgvector",
		"knowledge: {embedder: {provider: cohere}}":          "use local or openai",
		"knowledge: {embedder: {send_dimensions: true}}":     "takes only dimensions",
		"knowledge: {embedder: {dimensions: 100000}}":        "takes 1 to 16000",
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

func TestKnowledge_PgvectorOnTheServersPostgres(t *testing.T) {
	t.Parallel()
	table := fmt.Sprintf("kb_vectors_%d", time.Now().UnixNano())
	c, err := Parse([]byte("knowledge: {name: pg, vector_db: {type: pgvector, table: "+table+"}}"), "k.yaml")
	if err != nil {
		t.Fatal(err)
	}
	d := testdbs.Postgres(t)
	t.Cleanup(func() {
		if tg, err := d.Driver().(db.SQLBacked).SQLTarget(); err == nil {
			tg.DB.Exec(`DROP TABLE IF EXISTS ai.` + table)
			tg.Release()
		}
	})
	kb, done, err := OpenKnowledge(context.Background(), c.Knowledge, d, t.TempDir(), slog.Default())
	if err != nil {
		t.Fatal(err)
	}
	defer done()
	if _, err := kb.Insert(context.Background(), knowledge.Content{Text: "pgvector stores the walrus facts"}); err != nil {
		t.Fatal(err)
	}
	docs, err := kb.Search(context.Background(), "walrus", nil, 3)
	if err != nil || len(docs) != 1 {
		t.Fatalf("%v %+v", err, docs)
	}
	// on SQLite there is no Postgres to borrow
	if _, _, err := OpenKnowledge(context.Background(), c.Knowledge, testdbs.SQLite(t), t.TempDir(), slog.Default()); err == nil {
		t.Fatal("pgvector without Postgres accepted")
	}
}

// pgvector's own errors reached stderr bare ("cannot parse `postgres://…`:
// invalid port"), naming no setting; they name knowledge.vector_db, and the
// DSN's password stays out.
func TestOpenKnowledge_PgvectorErrorNamesTheKey(t *testing.T) {
	t.Parallel()
	c, err := Parse([]byte("knowledge:\n  vector_db: {type: pgvector, dsn: \"postgres://u:sekrit@127.0.0.1:bad/db\"}\n"), "k.yaml")
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = OpenKnowledge(context.Background(), c.Knowledge, testdbs.SQLite(t), t.TempDir(), slog.Default())
	if err == nil || !strings.HasPrefix(err.Error(), "knowledge.vector_db") || strings.Contains(err.Error(), "sekrit") {
		t.Fatalf("%v", err)
	}
}
