//go:build unix

package sqlite

import (
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// The SQLite migration lock excludes other holders while held, and its
// file is gone once released, also when holders race to take it.
func TestFlockFile_ExcludesAndLeavesNoFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "agno.db.migrate-lock")
	var inside atomic.Int32
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 20 {
				for {
					release, ok, err := flockFile(path)
					if err != nil {
						t.Error(err)
						return
					}
					if !ok {
						continue // retry at once: races the holder's unlink
					}
					if n := inside.Add(1); n != 1 {
						t.Errorf("%d holders at once", n)
					}
					time.Sleep(200 * time.Microsecond) // a holder holds the lock for a while
					inside.Add(-1)
					release()
					break
				}
			}
		})
	}
	wg.Wait()
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("the lock file is left after use: %v", err)
	}
}
