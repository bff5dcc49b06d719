package knowledge

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/agentryhq/agentry/db/dbtest/testdbs"
	"github.com/agentryhq/agentry/embedder/local"
	"github.com/agentryhq/agentry/vectordb"
	"github.com/agentryhq/agentry/vectordb/embedded"
)

// An embedder whose vectors the store cannot hold is refused by New, not
// found out by the first insert after it embedded the whole document (an
// embeddings API bills for that) and by every search.
func TestNew_RefusesEmbedderOfOtherDimensions(t *testing.T) {
	t.Parallel()
	vs, err := embedded.Open(context.Background(), embedded.Config{Path: filepath.Join(t.TempDir(), "v.db"), Dimensions: 64, EmbedderID: "e"})
	if err != nil {
		t.Fatal(err)
	}
	defer vs.Close()
	_, err = New(Config{DB: testdbs.SQLite(t), Vectors: vs, Embedder: local.New(local.Config{Dimensions: 32})})
	if !errors.Is(err, vectordb.ErrEmbedderMismatch) {
		t.Fatalf("err %v, want ErrEmbedderMismatch", err)
	}
}
