package pgvector

import (
	"context"
	"math"
	"testing"

	"github.com/agentryhq/agentry/vectordb"
)

// Cosine similarity ignores a vector's length, and so does the store: a
// vector with a component over halfvec's 65,504 was refused by the HNSW
// index's cast on write and on search ("out of range for type halfvec"),
// and one of tiny components scored NaN (its float32 norm underflowed),
// which no JSON answer carries.
func TestSearch_VectorsOfAnyLength(t *testing.T) {
	s := openStore(t)
	ctx := context.Background()
	big := []float32{1e5, 1, 0, 0, 0, 0, 0, 0}
	tiny := []float32{0, 0, 1e-30, 1e-30, 0, 0, 0, 0}
	if err := s.Upsert(ctx, []vectordb.Row{
		{ID: "big", ContentID: "c", Content: "big", Vector: big},
		{ID: "tiny", ContentID: "c", Content: "tiny", Vector: tiny},
	}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		id string
		q  []float32
	}{{"big", []float32{7e4, 0, 0, 0, 0, 0, 0, 0}}, {"tiny", []float32{0, 0, 3e-30, 3e-30, 0, 0, 0, 0}}} {
		for _, mode := range []vectordb.Mode{vectordb.Vector, vectordb.Hybrid} {
			h, err := s.Search(ctx, vectordb.Query{Mode: mode, Vector: c.q, Text: c.id, Limit: 1})
			if err != nil {
				t.Fatalf("%s %s: %v", mode, c.id, err)
			}
			if len(h) != 1 || h[0].ID != c.id || math.IsNaN(h[0].Score) || mode == vectordb.Vector && h[0].Score < 0.99 {
				t.Fatalf("%s %s: hits %+v", mode, c.id, h)
			}
		}
	}
}
