package pgvector

import (
	"context"
	"errors"
	"testing"

	"github.com/agentryhq/agentry/vectordb"
)

// Text Postgres cannot hold (NUL, invalid UTF-8) reached it and came back
// as its raw error (SQLSTATE 22021, 22P05), a server error for bad input.
// Content and names are stored as Agno's PgVector stores content (U+FFFD
// in place); ids, metadata and filters holding it are refused as invalid;
// deleting or looking up such an id finds nothing.
func TestUpsert_TextPostgresCannotHold(t *testing.T) {
	s := openStore(t)
	ctx := context.Background()
	v := []float32{1, 0, 0, 0, 0, 0, 0, 0}
	if err := s.Upsert(ctx, []vectordb.Row{{ID: "a", ContentID: "c", Name: "n\x00", Content: "ceres\x00dwarf \xffplanet", Vector: v}}); err != nil {
		t.Fatal(err)
	}
	h, err := s.Search(ctx, vectordb.Query{Mode: vectordb.Keyword, Text: "planet", Limit: 5})
	if err != nil || len(h) != 1 || h[0].Content != "ceres\uFFFDdwarf \uFFFDplanet" || h[0].Name != "n\uFFFD" {
		t.Fatalf("hits %+v %v", h, err)
	}
	for _, r := range []vectordb.Row{
		{ID: "b\x00", ContentID: "c", Content: "x", Vector: v},
		{ID: "b", ContentID: "c\xff", Content: "x", Vector: v},
		{ID: "b", ContentID: "c", Content: "x", Vector: v, Metadata: map[string]any{"k": "a\x00b"}},
	} {
		if err := s.Upsert(ctx, []vectordb.Row{r}); !errors.Is(err, vectordb.ErrInvalidQuery) {
			t.Fatalf("row %+v: %v, want ErrInvalidQuery", r, err)
		}
	}
	if err := s.UpdateMetadata(ctx, "c", map[string]any{"k": "\x00"}); !errors.Is(err, vectordb.ErrInvalidQuery) {
		t.Fatalf("metadata update with NUL: %v", err)
	}
	for _, mode := range []vectordb.Mode{vectordb.Vector, vectordb.Keyword} {
		_, err := s.Search(ctx, vectordb.Query{Mode: mode, Vector: v, Text: "planet", Filters: map[string]any{"k": "a\x00b"}})
		if !errors.Is(err, vectordb.ErrInvalidQuery) {
			t.Fatalf("%s filter with NUL: %v", mode, err)
		}
	}
	if err := s.DeleteContent(ctx, "c\x00"); err != nil {
		t.Fatal(err)
	}
	if ok, err := s.HasContentHash(ctx, "h\xff"); ok || err != nil {
		t.Fatalf("hash: %v %v", ok, err)
	}
	if n, _ := s.Count(ctx); n != 1 {
		t.Fatalf("%d rows, want 1", n)
	}
}
