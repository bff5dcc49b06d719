package embedded

import (
	"context"
	"fmt"
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

// The store's own writes and searches go on while another process writes:
// in the end a vector search finds every row, each once.
func TestSearch_SyncsWhileItsOwnWritesGoOn(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "v.db")
	ctx := context.Background()
	server := openAt(t, path)
	defer server.Close()
	cli := openAt(t, path)
	defer cli.Close()
	done := make(chan error, 3)
	write := func(s *Store, prefix string) {
		for i := range 10 {
			id := fmt.Sprintf("%s%d", prefix, i)
			if err := s.Upsert(ctx, []vectordb.Row{{ID: id, ContentID: id, Content: "row", Vector: vec(i)}}); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}
	go write(server, "s")
	go write(cli, "c")
	go func() {
		for range 20 {
			if _, err := server.Search(ctx, vectordb.Query{Mode: vectordb.Vector, Vector: vec(1), Limit: 5}); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	for range 3 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	h, err := server.Search(ctx, vectordb.Query{Mode: vectordb.Vector, Vector: vec(1), Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, x := range h {
		if seen[x.ID] {
			t.Fatalf("%s twice: %v", x.ID, ids(h))
		}
		seen[x.ID] = true
	}
	if len(h) != 20 {
		t.Fatalf("%d hits, want 20: %v", len(h), ids(h))
	}
}
