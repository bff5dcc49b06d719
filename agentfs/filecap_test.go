package agentfs_test

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/agentryhq/agentry/agentfs"
	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/dbtest/testdbs"
)

// Empty files cost no bytes, so the byte quota let a scope create files
// without bound (and each quota write sums the whole namespace: 20,000
// files took 52 s to write). Config.MaxNamespaceFiles caps their number;
// rewriting a file adds none.
func TestFS_MaxNamespaceFilesCapsEmptyFilesOnEveryDriver(t *testing.T) {
	t.Parallel()
	testdbs.Each(t, func(t *testing.T, d *db.DB) {
		fs := newFS(t, d, agentfs.Config{MaxNamespaceFiles: 3})
		for _, p := range []string{"a", "b", "c"} {
			must[agentfs.Info](t)(fs.Write(ctx, alice, p, nil, agentfs.WriteOptions{}))
		}
		_, err := fs.Write(ctx, alice, "d", nil, agentfs.WriteOptions{})
		wantErr(t, err, agentfs.ErrQuotaExceeded)
		if !strings.Contains(err.Error(), "the limit is 3 files") {
			t.Fatalf("error %q does not name the file limit", err)
		}
		// rewrites at the cap: plain, versioned, with content
		must[agentfs.Info](t)(fs.Write(ctx, alice, "a", []byte("now with content"), agentfs.WriteOptions{}))
		v := int64(1)
		must[agentfs.Info](t)(fs.Write(ctx, alice, "b", nil, agentfs.WriteOptions{IfVersion: &v}))
		// another scope has its own count
		must[agentfs.Info](t)(fs.Write(ctx, agentfs.Scope{SessionID: "s2", UserID: "alice"}, "d", nil, agentfs.WriteOptions{}))
		if err := fs.Delete(ctx, alice, "c"); err != nil {
			t.Fatal(err)
		}
		must[agentfs.Info](t)(fs.Write(ctx, alice, "d", nil, agentfs.WriteOptions{}))
		if u := must[db.FileUsage](t)(fs.Usage(ctx, alice)); u.Files != 3 {
			t.Fatalf("usage = %+v, want 3 files", u)
		}
	})
}

func TestFS_MaxNamespaceFilesDefaultAndNegative(t *testing.T) {
	t.Parallel()
	d := testdbs.Memory(t)
	if c := newFS(t, d, agentfs.Config{}).Config(); c.MaxNamespaceFiles != 10_000 {
		t.Fatalf("default MaxNamespaceFiles = %d", c.MaxNamespaceFiles)
	}
	if _, err := agentfs.New(agentfs.Config{DB: d, MaxNamespaceFiles: -1}); err == nil {
		t.Fatal("a negative MaxNamespaceFiles was accepted")
	}
}

// Writers in two processes (two pools on one database) creating files at
// once: the count is checked in the write's locked transaction, so they
// never pass the cap together.
func TestFS_ConcurrentCreatorsStayWithinMaxNamespaceFiles(t *testing.T) {
	t.Parallel()
	testdbs.EachTwins(t, func(t *testing.T, a, b *db.DB) {
		const limit = 4
		fss := []*agentfs.FS{newFS(t, a, agentfs.Config{MaxNamespaceFiles: limit}),
			newFS(t, b, agentfs.Config{MaxNamespaceFiles: limit})}
		var wg sync.WaitGroup
		var written atomic.Int64
		for i := range 12 {
			wg.Go(func() {
				_, err := fss[i%2].Write(ctx, alice, fmt.Sprintf("f%02d", i), nil, agentfs.WriteOptions{})
				switch {
				case err == nil:
					written.Add(1)
				case !errors.Is(err, agentfs.ErrQuotaExceeded):
					t.Error(err)
				}
			})
		}
		wg.Wait()
		if n := written.Load(); n != limit {
			t.Fatalf("%d creates succeeded, want exactly %d", n, limit)
		}
		for _, fs := range fss {
			if u := must[db.FileUsage](t)(fs.Usage(ctx, alice)); u.Files != limit {
				t.Fatalf("usage = %+v, want %d files", u, limit)
			}
		}
	})
}
