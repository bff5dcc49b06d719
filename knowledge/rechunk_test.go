package knowledge

import (
	"context"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/db/dbtest/testdbs"
	"github.com/agentryhq/agentry/knowledge/chunk"
	"github.com/agentryhq/agentry/knowledge/reader"
)

// The same bytes inserted again with another chunker (an upload again with
// another chunk_size) or another reader are chunked again: they were
// skipped as unchanged and kept the first insert's chunks, the new
// chunker accepted and ignored. With the same chunker they are skipped.
func TestInsert_SameBytesWithAnotherChunkerAreChunkedAgain(t *testing.T) {
	t.Parallel()
	k := newKB(t, testdbs.SQLite(t), nil)
	ctx := context.Background()
	body := strings.Repeat("Bees make honey from nectar. ", 40)
	upload := func(ch chunk.Chunker, kind string) Content {
		return Content{Name: "bees", Filename: "bees.txt", Data: []byte(body), Chunker: ch, Reader: kind}
	}
	first, err := k.Insert(ctx, upload(nil, ""))
	if err != nil {
		t.Fatal(err)
	}
	same, err := k.Insert(ctx, upload(nil, ""))
	if err != nil || !same.Skipped {
		t.Fatalf("the same insert again: %v, skipped %v", err, same != nil && same.Skipped)
	}
	small, err := k.Insert(ctx, upload(chunk.Fixed{Size: 100}, ""))
	if err != nil {
		t.Fatal(err)
	}
	if small.Skipped || small.Content.ID != first.Content.ID || small.Chunks <= first.Chunks {
		t.Fatalf("with 100-character chunks: skipped %v, %d chunks (first %d)", small.Skipped, small.Chunks, first.Chunks)
	}
	if n, _ := k.cfg.Vectors.Count(ctx); n != small.Chunks {
		t.Fatalf("%d chunks stored, want %d", n, small.Chunks)
	}
	again, err := k.Insert(ctx, upload(chunk.Fixed{Size: 100}, ""))
	if err != nil || !again.Skipped {
		t.Fatalf("the same chunker again: %v, skipped %v", err, again != nil && again.Skipped)
	}
	md, err := k.Insert(ctx, upload(chunk.Fixed{Size: 100}, reader.Markdown))
	if err != nil || md.Skipped {
		t.Fatalf("with another reader: %v, skipped %v", err, md != nil && md.Skipped)
	}
	if md.Content.Type != reader.MIME(reader.Markdown) {
		t.Fatalf("type %q after reading as Markdown", md.Content.Type)
	}
}

// tokenChunker is a chunker of the caller's own holding a pointer (a
// tokenizer, a cache): its address differs between two instances of the
// same settings, as between two processes.
type tokenChunker struct {
	words *int
	chunk.Fixed
}

func (tokenChunker) Name() string { return "TokenChunker" }

// A chunker of the caller's own given again (a new instance, as every
// process makes its own) leaves the same bytes skipped as unchanged: the
// hash printed its fields, pointer addresses with them, and re-indexed the
// content on every insert.
func TestInsert_SameBytesWithTheSameOwnChunkerAreSkipped(t *testing.T) {
	t.Parallel()
	k := newKB(t, testdbs.SQLite(t), nil)
	ctx := context.Background()
	upload := func() Content {
		n := 50
		return Content{Name: "bees", Filename: "bees.txt", Data: []byte(strings.Repeat("Bees make honey. ", 40)),
			Chunker: tokenChunker{words: &n, Fixed: chunk.Fixed{Size: 100}}}
	}
	if _, err := k.Insert(ctx, upload()); err != nil {
		t.Fatal(err)
	}
	again, err := k.Insert(ctx, upload())
	if err != nil || !again.Skipped {
		t.Fatalf("the same chunker again: %v, skipped %v", err, again != nil && again.Skipped)
	}
}
