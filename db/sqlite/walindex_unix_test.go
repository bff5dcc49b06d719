//go:build unix

package sqlite

import (
	"context"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/run"
)

// walIndexNamed looks up the registry's file whose name ends in suffix:
// listed reports whether the name is there at all, h is its header while
// alive (nil once collected).
func walIndexNamed(suffix string) (h *walIndexHeader, listed bool) {
	walIndexes.mu.Lock()
	defer walIndexes.mu.Unlock()
	for name, wp := range walIndexes.byName {
		if strings.HasSuffix(name, suffix) {
			return wp.Value(), true
		}
	}
	return nil, false
}

// The WAL-index registry holds a file's name while a store of the file is
// open, and forgets it once the store is closed and collected: a process
// that opens many files (a test suite, a server per tenant) does not keep
// an entry for each forever. A store of the same file opened again finds a
// live counter.
func TestWALIndexRegistry_ForgetsClosedFiles(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "registry.db")
	suffix := filepath.Join(filepath.Base(dir), "registry.db")

	for round := range 2 {
		func() {
			d, err := Open(ctx, Config{Path: path})
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			h, _ := walIndexNamed(suffix)
			if h == nil {
				t.Fatalf("round %d: an open store's file is not in the registry", round)
			}
			before, ok := h.change()
			if !ok {
				t.Fatalf("round %d: the open store's WAL index is not mapped", round)
			}
			if _, err := d.UpsertSession(ctx, &db.Session{SessionID: "s", SessionType: run.TypeAgent}); err != nil {
				t.Fatal(err)
			}
			if after, _ := h.change(); after == before {
				t.Fatalf("round %d: a commit left the counter at %x", round, after)
			}
		}()
		deadline := time.Now().Add(10 * time.Second)
		for {
			if _, listed := walIndexNamed(suffix); !listed {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("round %d: a closed store's file is still in the registry", round)
			}
			runtime.GC()
			time.Sleep(10 * time.Millisecond)
		}
	}
}
