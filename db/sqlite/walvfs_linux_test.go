package sqlite_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/agentryhq/agentry/db"
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

// walFullChildEnv makes the test binary a writer child that runs out of
// file size (see walFullWriter).
const walFullChildEnv = "AGENTRY_TEST_SQLITE_WAL_FULL_WRITER"

// TestWAL_AFailedWriteFailsTheSaveAndLosesNothing runs a writer whose file
// size limit (RLIMIT_FSIZE) stops the WAL from growing: the buffered write
// of a commit fails, so SaveRun must return an error (not report the run as
// stored), the process must go on reading what it stored, and the file must
// hold every run SaveRun returned for.
func TestWAL_AFailedWriteFailsTheSaveAndLosesNothing(t *testing.T) {
	if path := os.Getenv(walFullChildEnv); path != "" {
		walFullWriter(path)
		return
	}
	t.Parallel()
	path := filepath.Join(t.TempDir(), "full.db")
	out, err := childCmd("TestWAL_AFailedWriteFailsTheSaveAndLosesNothing", walFullChildEnv, path).CombinedOutput()
	if err != nil {
		t.Fatalf("writer: %v: %s", err, out)
	}
	acked := map[string]int{}
	var failed string
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		var id string
		var n int
		switch {
		case strings.HasPrefix(l, "saved "):
			if _, err := fmt.Sscanf(l, "saved %s %d", &id, &n); err != nil {
				t.Fatalf("writer said %q", l)
			}
			acked[id] = n
		case strings.HasPrefix(l, "failed "):
			failed = l
		case l == "read back", strings.HasPrefix(l, "PASS"), strings.HasPrefix(l, "ok"):
		default:
			t.Fatalf("writer said %q:\n%s", l, out)
		}
	}
	if failed == "" || !strings.Contains(string(out), "read back") {
		t.Fatalf("the writer did not fail and read back:\n%s", out)
	}
	if !strings.Contains(failed, "I/O") && !strings.Contains(failed, "disk") {
		t.Fatalf("the failed save says %q; want SQLite's I/O error", failed)
	}
	t.Logf("%d runs stored before: %s", len(acked), failed)

	plain := openPlain(t, path)
	wantIntact(t, plain)
	for id, n := range acked {
		var got int
		if err := plain.QueryRow("SELECT length(run_data) FROM agno_runs WHERE run_id = ?", id).Scan(&got); err != nil || got != n {
			t.Fatalf("run %s: %d bytes, %v; want %d", id, got, err, n)
		}
	}
}

// walFullWriter stores runs, then limits the process's file size to a
// little more than the WAL has, stores runs until SaveRun fails, and reads
// every stored run back.
func walFullWriter(path string) {
	fail := func(err error) {
		fmt.Println("error:", err)
		os.Exit(2)
	}
	d, err := sqlite.Open(ctx, sqlite.Config{Path: path, CheckpointInterval: -1})
	if err != nil {
		fail(err)
	}
	var saved []*db.Run
	save := func(i int) error {
		s, r := walRun("f", i)
		if i >= 5 { // turn-sized: the commit's one write is what fails
			r.RunData = []byte(fmt.Sprintf(`{"run_id":%q,"content":%q}`, r.RunID, strings.Repeat("y", 1500)))
		}
		if _, _, err := d.SaveRun(ctx, s, r); err != nil {
			return err
		}
		saved = append(saved, r)
		fmt.Printf("saved %s %d\n", r.RunID, len(r.RunData))
		return nil
	}
	for i := range 5 {
		if err := save(i); err != nil {
			fail(err)
		}
	}
	wal, err := os.Stat(path + "-wal")
	if err != nil {
		fail(err)
	}
	limit := uint64(wal.Size()) + 40_000
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &syscall.Rlimit{Cur: limit, Max: limit}); err != nil {
		fail(err)
	}
	for i := 5; ; i++ {
		if i > 200 {
			fail(fmt.Errorf("200 runs stored past a file size limit of %d bytes", limit))
		}
		if err := save(i); err != nil {
			fmt.Println("failed", strings.ReplaceAll(err.Error(), "\n", " "))
			break
		}
	}
	for _, r := range saved {
		got, err := d.GetRun(ctx, r.RunID)
		if err != nil {
			fail(err)
		}
		if string(got.RunData) != string(r.RunData) {
			fail(fmt.Errorf("run %s reads back %d bytes, stored %d", r.RunID, len(got.RunData), len(r.RunData)))
		}
	}
	fmt.Println("read back")
	os.Exit(0)
}
