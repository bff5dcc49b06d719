package embedded

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/agentryhq/agentry/vectordb"
	"github.com/agentryhq/agentry/vectordb/vectordbtest"
)

// A search with many metadata filters works as one with few: past a few
// hundred, every search failed with SQLite's "Expression tree is too large
// (maximum depth 1000)", the filters being one long chain of ANDs (the
// pgvector store takes any number).
func TestSearch_ManyFilters(t *testing.T) {
	t.Parallel()
	for _, exactBelow := range []int{0, 1} { // scored exactly; walked
		s, err := Open(context.Background(), Config{Path: filepath.Join(t.TempDir(), "v.db"), Dimensions: vectordbtest.Dims, EmbedderID: "test-8", ExactBelow: exactBelow})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		ctx := context.Background()
		meta := map[string]any{}
		for i := range 600 {
			switch i % 3 {
			case 0:
				meta[fmt.Sprintf("k%d", i)] = fmt.Sprint(i)
			case 1:
				meta[fmt.Sprintf("k.%d", i)] = i
			default:
				meta[fmt.Sprintf("k-%d", i)] = i%2 == 0
			}
		}
		if err := s.Upsert(ctx, []vectordb.Row{
			{ID: "match", ContentID: "c", Content: "ceres", Vector: vec(1), Metadata: meta},
			{ID: "other", ContentID: "c", Content: "ceres", Vector: vec(1), Metadata: map[string]any{"k0": "0"}},
		}); err != nil {
			t.Fatal(err)
		}
		miss := map[string]any{}
		for k, v := range meta {
			miss[k] = v
		}
		miss["k3"] = "4"
		for _, mode := range []vectordb.Mode{vectordb.Vector, vectordb.Keyword, vectordb.Hybrid} {
			h, err := s.Search(ctx, vectordb.Query{Mode: mode, Vector: vec(1), Text: "ceres", Filters: meta})
			if err != nil || len(h) != 1 || h[0].ID != "match" {
				t.Fatalf("ExactBelow %d, %s: hits %v, %v", exactBelow, mode, ids(h), err)
			}
			if h, err := s.Search(ctx, vectordb.Query{Mode: mode, Vector: vec(1), Text: "ceres", Filters: miss}); err != nil || len(h) != 0 {
				t.Fatalf("ExactBelow %d, %s, one filter off: hits %v, %v", exactBelow, mode, ids(h), err)
			}
		}
	}
}
