package knowledge

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/db/dbtest/testdbs"
	"github.com/agentryhq/agentry/knowledge/chunk"
)

// A chunk's own metadata (its number and size) wins over the content's
// keys of the same names, as Update keeps them: a content whose metadata
// held "chunk" and "chunk_size" gave every chunk those values, so the
// chunks could no longer be told apart or ordered.
func TestInsert_ChunksKeepTheirOwnNumberAndSize(t *testing.T) {
	t.Parallel()
	k := newKB(t, testdbs.SQLite(t), func(c *Config) { c.Chunker = chunk.Fixed{Size: 40} })
	text := strings.Repeat("Mars has two small moons, Phobos and Deimos. ", 4)
	res, err := k.Insert(context.Background(), Content{Text: text, Metadata: map[string]any{"chunk": "mine", "chunk_size": -1, "topic": "space"}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Chunks < 2 {
		t.Fatalf("%d chunks, want several", res.Chunks)
	}
	docs, err := k.Search(context.Background(), "moons of mars", nil, 20)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, d := range docs {
		n, size := fmt.Sprint(d.MetaData["chunk"]), fmt.Sprint(d.MetaData["chunk_size"])
		if n == "mine" || size == "-1" || d.MetaData["topic"] != "space" {
			t.Errorf("chunk metadata %v", d.MetaData)
		}
		seen[n] = true
	}
	if len(seen) != len(docs) {
		t.Errorf("%d hits with %d distinct chunk numbers", len(docs), len(seen))
	}
}
