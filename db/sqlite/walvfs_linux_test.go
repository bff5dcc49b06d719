package sqlite_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/db/sqlite"
)

// TestWAL_ACommitIsOneWriteCall counts the process's write system calls
// (/proc/self/io) over turn-sized run saves: the writer's WAL writes a
// transaction's frames (~8 for such a run, two writes each with SQLite's own
// VFS) with one call. Not parallel: other tests' writes would count.
func TestWAL_ACommitIsOneWriteCall(t *testing.T) {
	path := filepath.Join(t.TempDir(), "calls.db")
	d, err := sqlite.Open(ctx, sqlite.Config{Path: path, CheckpointInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	save := func(i int) {
		s, r := walRun("c", i)
		r.RunData = []byte(fmt.Sprintf(`{"run_id":%q,"content":%q}`, r.RunID, strings.Repeat("x", 1500))) // a turn's size
		if _, _, err := d.SaveRun(ctx, s, r); err != nil {
			t.Fatal(err)
		}
	}
	save(0) // opens the WAL
	const n = 30
	before := writeCalls(t)
	for i := 1; i <= n; i++ {
		save(i)
	}
	calls := writeCalls(t) - before
	if calls > 2*n {
		t.Fatalf("%d runs saved with %d write calls; want at most %d (one a commit, with room for the odd other write)", n, calls, 2*n)
	}
	t.Logf("%d runs saved with %d write calls", n, calls)
}

// writeCalls is the process's count of write system calls so far.
func writeCalls(t *testing.T) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/io")
	if err != nil {
		t.Fatal(err)
	}
	var syscw int64
	for _, line := range strings.Split(string(b), "\n") {
		if _, err := fmt.Sscanf(line, "syscw: %d", &syscw); err == nil {
			return syscw
		}
	}
	t.Fatalf("no syscw in /proc/self/io: %q", b)
	return 0
}
