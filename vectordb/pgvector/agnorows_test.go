package pgvector

import (
	"context"
	"testing"

	"github.com/agentryhq/agentry/vectordb"
)

// Rows Agno's PgVector wrote into its table (migrated to v3: user_id
// added) may lack an embedding (Agno writes NULL when embedding a chunk
// failed), metadata or content: a search that met one failed whole ("converting
// NULL to float64"); such rows are not vector hits, and keyword search
// still finds them.
func TestSearch_AgnoRowsWithoutEmbeddingOrMetadata(t *testing.T) {
	raw, schema := testSchema(t)
	if _, err := raw.Exec(`CREATE EXTENSION IF NOT EXISTS vector; CREATE SCHEMA "` + schema + `"; CREATE TABLE "` + schema + `".agno_vectors (
		id VARCHAR PRIMARY KEY, name VARCHAR, meta_data JSONB DEFAULT '{}'::jsonb, filters JSONB DEFAULT '{}'::jsonb, content TEXT, embedding vector(8), usage JSONB,
		created_at TIMESTAMPTZ DEFAULT now(), updated_at TIMESTAMPTZ, content_hash VARCHAR, content_id VARCHAR, user_id VARCHAR);
		INSERT INTO "` + schema + `".agno_vectors (id, name, meta_data, content, embedding, content_id) VALUES
			('ok', 'doc', '{"lang": "en"}', 'ceres is a dwarf planet', '[1,0,0,0,0,0,0,0]', 'c1'),
			('noemb', 'doc', '{"lang": "en"}', 'pallas is an asteroid planet', NULL, 'c1'),
			('nometa', NULL, NULL, 'vesta planet', '[0,1,0,0,0,0,0,0]', 'c2'),
			('nocontent', 'doc', '{}', NULL, '[0,0,1,0,0,0,0,0]', 'c3')`); err != nil {
		t.Fatal(err)
	}
	s, err := Open(context.Background(), Config{DB: raw, Schema: schema, Dimensions: 8})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	for _, q := range []vectordb.Query{
		{Mode: vectordb.Vector, Vector: []float32{1, 0, 0, 0, 0, 0, 0, 0}, Limit: 10},
		{Mode: vectordb.Vector, Vector: []float32{1, 0, 0, 0, 0, 0, 0, 0}, Limit: 10, Filters: map[string]any{"lang": "en"}},
		{Mode: vectordb.Hybrid, Vector: []float32{1, 0, 0, 0, 0, 0, 0, 0}, Text: "planet", Limit: 10},
	} {
		h, err := s.Search(ctx, q)
		if err != nil {
			t.Fatalf("%s %v: %v", q.Mode, q.Filters, err)
		}
		got := map[string]bool{}
		for _, x := range h {
			got[x.ID] = true
		}
		if !got["ok"] || (q.Filters == nil && (!got["nometa"] || !got["nocontent"])) || (q.Mode == vectordb.Vector && got["noemb"]) || (q.Mode == vectordb.Hybrid && !got["noemb"]) {
			t.Fatalf("%s %v: hits %v", q.Mode, q.Filters, h)
		}
	}
}
