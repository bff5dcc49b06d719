package agentos

import (
	"context"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/sqlite"
	"github.com/agentryhq/agentry/embedder/local"
	"github.com/agentryhq/agentry/knowledge"
	"github.com/agentryhq/agentry/vectordb/embedded"
)

// twoKnowledgeBases serves knowledge base "alpha" (database db-a, about
// apples) and "beta" (database db-b, about bananas).
func twoKnowledgeBases(t *testing.T) string {
	t.Helper()
	var kbs []*knowledge.Knowledge
	var dbs []*db.DB
	for _, c := range []struct{ name, dbID, text string }{{"alpha", "db-a", "apples grow on trees"}, {"beta", "db-b", "bananas grow in bunches"}} {
		d, err := sqlite.Open(context.Background(), sqlite.Config{Path: filepath.Join(t.TempDir(), c.name+".db"), ID: c.dbID})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { d.Close() })
		e := local.New(local.Config{Dimensions: 64})
		vs, err := embedded.Open(context.Background(), embedded.Config{Path: filepath.Join(t.TempDir(), c.name+"-v.db"), Dimensions: 64, EmbedderID: e.ID()})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { vs.Close() })
		k, err := knowledge.New(knowledge.Config{Name: c.name, DB: d, Vectors: vs, Embedder: e})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := k.Insert(context.Background(), knowledge.Content{Name: c.name + " doc", Text: c.text}); err != nil {
			t.Fatal(err)
		}
		kbs, dbs = append(kbs, k), append(dbs, d)
	}
	ts, _ := testServer(t, Config{DBs: dbs, Knowledge: kbs}, nil)
	return ts.URL
}

// db_id and vector_db_ids of POST /knowledge/search select the knowledge
// base (as Agno: by the database holding its contents; its one vector store
// must be among the ids) instead of being ignored; ?db_id= does the same on
// the other knowledge routes.
func TestKnowledgeSearch_DBIDAndVectorDBIDsSelectOrRefuse(t *testing.T) {
	t.Parallel()
	u := twoKnowledgeBases(t)
	jsonH := map[string]string{"Content-Type": "application/json"}
	for _, tt := range []struct {
		body   string
		status int
		want   string
	}{
		{`{"query": "grow"}`, 200, "apples"},
		{`{"query": "grow", "db_id": "db-b"}`, 200, "bananas"},
		{`{"query": "grow", "db_id": "db-a"}`, 200, "apples"},
		{`{"query": "grow", "knowledge_id": "beta", "db_id": "db-b"}`, 200, "bananas"},
		{`{"query": "grow", "knowledge_id": "beta", "db_id": "db-a"}`, 404, "not found in database db-a"},
		{`{"query": "grow", "db_id": "db-z"}`, 404, "Knowledge instance with db_id 'db-z' not found"},
		{`{"query": "grow", "db_id": "db-b", "vector_db_ids": ["beta"]}`, 200, "bananas"},
		{`{"query": "grow", "db_id": "db-b", "vector_db_ids": ["alpha"]}`, 400, "None of the provided Vector DB IDs alpha match"},
		{`{"query": "grow", "vector_db_ids": ["nope", "alpha"]}`, 200, "apples"},
	} {
		res := do(t, "POST", u+"/knowledge/search", strings.NewReader(tt.body), jsonH)
		if res.status != tt.status || !strings.Contains(res.body, tt.want) {
			t.Errorf("%s: %d %s, want %d with %q", tt.body, res.status, res.body, tt.status, tt.want)
		}
		if tt.status == 200 && strings.Contains(res.body, "apples") == strings.Contains(res.body, "bananas") {
			t.Errorf("%s: searched both or neither knowledge base: %s", tt.body, res.body)
		}
	}
	for _, tt := range []struct {
		query  string
		status int
		want   string
	}{
		{"?db_id=db-b", 200, "beta doc"},
		{"?db_id=db-a", 200, "alpha doc"},
		{"?db_id=db-z", 404, "db-z"},
	} {
		res := get(t, u+"/knowledge/content"+tt.query, nil)
		if res.status != tt.status || !strings.Contains(res.body, tt.want) {
			t.Errorf("GET /knowledge/content%s: %d %s", tt.query, res.status, res.body)
		}
	}
	if res := get(t, u+"/knowledge/config?db_id=db-b", nil); res.status != http.StatusOK || !strings.Contains(res.body, `"id":"beta"`) {
		t.Errorf("config for db-b: %d %s", res.status, res.body)
	}
}
