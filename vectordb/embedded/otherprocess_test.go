package embedded

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/agentryhq/agentry/vectordb"
)

// Rows another process writes to the file (agentry knowledge insert while
// agentry serve runs on it) are found by a vector search of the running
// store: its graphs, built when it opened, knew none of them, so only
// keyword search found them until a restart.
func TestSearch_SeesRowsAnotherProcessWrote(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "v.db")
	ctx := context.Background()
	server := openAt(t, path)
	defer server.Close()
	if err := server.Upsert(ctx, []vectordb.Row{{ID: "s", ContentID: "cs", Content: "server row", Vector: vec(1)}}); err != nil {
		t.Fatal(err)
	}
	cli := openAt(t, path)
	if err := cli.Upsert(ctx, []vectordb.Row{{ID: "c", ContentID: "cc", Content: "cli row", Vector: vec(5)}}); err != nil {
		t.Fatal(err)
	}
	if err := cli.DeleteContent(ctx, "cs"); err != nil {
		t.Fatal(err)
	}
	if err := cli.Close(); err != nil {
		t.Fatal(err)
	}
	for _, mode := range []vectordb.Mode{vectordb.Vector, vectordb.Hybrid} {
		h, err := server.Search(ctx, vectordb.Query{Mode: mode, Vector: vec(5), Text: "row", Limit: 5})
		if err != nil {
			t.Fatal(err)
		}
		if len(h) != 1 || h[0].ID != "c" || mode == vectordb.Vector && h[0].Score < 0.99 {
			t.Fatalf("%s: hits %+v, want the row the other process wrote", mode, h)
		}
	}
	// the server's own writes go on, and what it saves on Close loads
	if err := server.Upsert(ctx, []vectordb.Row{{ID: "s2", ContentID: "cs2", Content: "server again", Vector: vec(2)}}); err != nil {
		t.Fatal(err)
	}
	if err := server.Close(); err != nil {
		t.Fatal(err)
	}
	reopened := openAt(t, path)
	defer reopened.Close()
	h, err := reopened.Search(ctx, vectordb.Query{Mode: vectordb.Vector, Vector: vec(2), Limit: 5})
	if err != nil || len(h) != 2 || h[0].ID != "s2" {
		t.Fatalf("after reopening: hits %v %v", ids(h), err)
	}
}

