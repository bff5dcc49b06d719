//go:build unix

package sqlite_test

import (
	"bufio"
	"database/sql"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	_ "modernc.org/sqlite" // the plain driver: SQLite's own unix VFS, as another process or tool uses it

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/sqlite"
	"github.com/agentryhq/agentry/internal/sqlstore"
	"github.com/agentryhq/agentry/run"
)

// The writer's WAL buffers a transaction's frames and writes them with one
// call (walvfs_unix.go). These tests hold it to what SQLite's own VFS
// guarantees: a commit is in the file when it returns (another connection,
// another process, a process killed right after), a long or spilled or
// rolled-back transaction leaves a WAL whose checksums recover every
// commit, and the file is the format every SQLite reads.

// walCrashChildEnv makes the test binary a writer child (see walCrashWriter).
const walCrashChildEnv = "AGENTRY_TEST_SQLITE_WAL_CRASH_WRITER"

// walRunData is run i's run_data: most are a turn's size, every seventh
// spans more than the WAL buffer (overflow pages, a transaction written in
// pieces), every third a few frames.
func walRunData(id string, i int) []byte {
	n := 1500
	switch {
	case i%7 == 6:
		n = 300_000
	case i%3 == 2:
		n = 20_000
	}
	return []byte(fmt.Sprintf(`{"run_id":%q,"content":%q}`, id, strings.Repeat(string(rune('a'+i%26)), n)))
}

func walRun(prefix string, i int) (*db.Session, *db.Run) {
	sid := fmt.Sprintf("%s-s%d", prefix, i/4)
	rid := fmt.Sprintf("%s-r%d", prefix, i)
	s := &db.Session{SessionID: sid, SessionType: run.TypeAgent, AgentID: "a"}
	r := &db.Run{RunID: rid, SessionID: sid, RunType: run.TypeAgent, AgentID: "a", Status: run.StatusCompleted, RunData: walRunData(rid, i)}
	return s, r
}

// TestWAL_KillLosesNoAcknowledgedCommit kills a process storing runs with
// SIGKILL at random moments, again and again on one file. The child says
// which runs SaveRun returned for; every one of them must be in the file,
// whole, and the file must be intact.
func TestWAL_KillLosesNoAcknowledgedCommit(t *testing.T) {
	if path := os.Getenv(walCrashChildEnv); path != "" {
		walCrashWriter(path)
		return
	}
	t.Parallel()
	path := filepath.Join(t.TempDir(), "crash.db")
	acked := map[string]int{} // run id → length of its run_data
	const kills = 12
	for k := range kills {
		cmd, out, stderr := startChild(t, "TestWAL_KillLosesNoAcknowledgedCommit", walCrashChildEnv, path)
		lines := make(chan string, 1024)
		go func() {
			defer close(lines)
			sc := bufio.NewScanner(out)
			for sc.Scan() {
				lines <- sc.Text()
			}
		}()
		if first := <-lines; first != "writing" {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			t.Fatalf("kill %d: writer did not start (%q): %s", k, first, stderr.String())
		}
		// Every life commits at least once before its kill (on a loaded
		// machine the first commit can take longer than the random delay);
		// the kill then lands at a random moment of the writes after it.
		firstAck, ok := <-lines
		if !ok {
			_ = cmd.Wait()
			t.Fatalf("kill %d: writer stopped before its first commit: %s", k, stderr.String())
		}
		acks := []string{firstAck}
		time.Sleep(time.Duration(5_000+rand.IntN(60_000)) * time.Microsecond)
		if err := cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		_ = cmd.Wait()
		for l := range lines {
			acks = append(acks, l)
		}
		for _, l := range acks {
			var id string
			var n int
			if _, err := fmt.Sscanf(l, "saved %s %d", &id, &n); err != nil {
				t.Fatalf("kill %d: child said %q", k, l)
			}
			acked[id] = n
		}
	}
	if len(acked) < kills {
		t.Fatalf("the writers acknowledged only %d runs in %d lives", len(acked), kills)
	}
	t.Logf("%d kills, %d runs acknowledged", kills, len(acked))

	// A plain connection (SQLite's own VFS) recovers the WAL the killed
	// writers left: its checksums must carry every acknowledged commit.
	plain := openPlain(t, path)
	wantIntact(t, plain)
	stored := countsBy(t, plain, "SELECT run_id, length(run_data) FROM agno_runs")
	var lost []string
	for id, n := range acked {
		if stored[id] != n {
			lost = append(lost, fmt.Sprintf("%s (acknowledged %d bytes, stored %d)", id, n, stored[id]))
		}
	}
	if len(lost) > 0 {
		t.Fatalf("%d of %d acknowledged runs lost or cut: %s", len(lost), len(acked), strings.Join(lost, ", "))
	}
}

// walCrashWriter stores runs until it is killed, printing each run SaveRun
// returned for.
func walCrashWriter(path string) {
	d, err := sqlite.Open(ctx, sqlite.Config{Path: path})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	prefix := fmt.Sprintf("p%d", os.Getpid())
	fmt.Println("writing")
	for i := 0; ; i++ {
		s, r := walRun(prefix, i)
		if _, _, err := d.SaveRun(ctx, s, r); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		fmt.Printf("saved %s %d\n", r.RunID, len(r.RunData))
	}
}

// TestWAL_ACommitIsVisibleWhenItReturns reads each run, as soon as SaveRun
// returns, through another connection with SQLite's own VFS (what another
// process or Agno uses), and then from a copy of the files taken while the
// writer is open, which SQLite recovers from the WAL alone.
func TestWAL_ACommitIsVisibleWhenItReturns(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "visible.db")
	d, err := sqlite.Open(ctx, sqlite.Config{Path: path, CheckpointInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	plain := openPlain(t, path)
	const n = 40
	for i := range n {
		s, r := walRun("v", i)
		if _, _, err := d.SaveRun(ctx, s, r); err != nil {
			t.Fatal(err)
		}
		var got int
		if err := plain.QueryRow("SELECT length(run_data) FROM agno_runs WHERE run_id = ?", r.RunID).Scan(&got); err != nil || got != len(r.RunData) {
			t.Fatalf("run %d: another connection reads %d bytes, %v; want %d", i, got, err, len(r.RunData))
		}
	}
	wantRuns(t, copyOpen(t, dir, path), "v", n)
}

// TestWAL_SpilledAndRolledBackTransactions: a transaction larger than the
// writer's page cache spills frames before its commit and then rewrites
// them in place (SQLite rewrites their checksums at the commit); another
// is rolled back after spilling, and the next commit writes over its
// frames; a third reads back the frames it spilled. The copy SQLite
// recovers from the WAL holds exactly the commits.
func TestWAL_SpilledAndRolledBackTransactions(t *testing.T) {
	dir, path, w := openWriter(t)
	exec := func(q string, args ...any) {
		t.Helper()
		if _, err := w.ExecContext(ctx, q, args...); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	exec("PRAGMA cache_size = 8") // pages: spill early
	exec("CREATE TABLE t (k INTEGER PRIMARY KEY, v BLOB)")
	big := func(seed, size int) string { return strings.Repeat(string(rune('a'+seed%26)), size) }

	// Spilled, then rewritten in place, then committed.
	tx := insertTx(t, w, 0, 200, 3000)
	for k := range 200 {
		if _, err := tx.ExecContext(ctx, "UPDATE t SET v = ? WHERE k = ?", big(k+1, 3000), k); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}

	// Spilled, then rolled back.
	tx = insertTx(t, w, 1000, 1200, 3000)
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}

	// Spilled frames read back by the transaction that wrote them, while
	// they are still in the buffer (a short transaction).
	tx = insertTx(t, w, 3000, 3020, 2000)
	var inTx int
	if err := tx.QueryRowContext(ctx, "SELECT sum(length(v)) FROM t WHERE k >= 3000").Scan(&inTx); err != nil || inTx != 20*2000 {
		t.Fatalf("the transaction reads back %d bytes of its rows, %v; want %d", inTx, err, 20*2000)
	}
	if _, err := tx.ExecContext(ctx, "DELETE FROM t WHERE k >= 3000"); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}

	// Small commits over the rolled-back frames.
	for k := 2000; k < 2010; k++ {
		exec("INSERT INTO t (k, v) VALUES (?, ?)", k, big(k, 100))
	}
	exec("PRAGMA cache_size = -2000")

	want := func(t *testing.T, c *sql.DB) {
		t.Helper()
		wantIntact(t, c)
		var rows, sum int
		if err := c.QueryRow("SELECT count(*), sum(length(v)) FROM t").Scan(&rows, &sum); err != nil {
			t.Fatal(err)
		}
		if rows != 210 || sum != 200*3000+10*100 {
			t.Fatalf("t holds %d rows of %d bytes; want 210 of %d", rows, sum, 200*3000+10*100)
		}
		var bad int
		if err := c.QueryRow("SELECT count(*) FROM t WHERE k < 200 AND substr(v, 1, 1) != char(97 + (k + 1) % 26)").Scan(&bad); err != nil || bad != 0 {
			t.Fatalf("%d rows without their update, %v", bad, err)
		}
	}
	want(t, openPlain(t, path))
	want(t, copyOpen(t, dir, path))
}

// insertTx begins a transaction on w and inserts rows from..to-1 into t,
// each value size letters long (the letter of its key).
func insertTx(t *testing.T, w *sql.DB, from, to, size int) *sql.Tx {
	t.Helper()
	tx, err := w.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k := from; k < to; k++ {
		if _, err := tx.ExecContext(ctx, "INSERT INTO t (k, v) VALUES (?, ?)", k, strings.Repeat(string(rune('a'+k%26)), size)); err != nil {
			t.Fatal(err)
		}
	}
	return tx
}

// openWriter opens a store on a new file and returns the file's directory
// and path and the store's writer: one connection, through the coalescing
// VFS.
func openWriter(t *testing.T) (dir, path string, w *sql.DB) {
	t.Helper()
	dir = t.TempDir()
	path = filepath.Join(dir, "wal.db")
	d, err := sqlite.Open(ctx, sqlite.Config{Path: path, CheckpointInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	st, ok := sqlstore.FromDB(d)
	if !ok {
		t.Fatal("not a SQL store")
	}
	return dir, path, st.SQL()
}

// openPlain opens path with the plain driver and SQLite's unix VFS.
func openPlain(t *testing.T, path string) *sql.DB {
	t.Helper()
	c, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// copyOpen copies the database and its WAL (not the WAL index) into a new
// directory and opens the copy: SQLite rebuilds the index from the WAL,
// keeping the frames up to the last commit whose checksums chain.
func copyOpen(t *testing.T, dir, path string) *sql.DB {
	t.Helper()
	to := filepath.Join(t.TempDir(), "copy.db")
	for _, suffix := range []string{"", "-wal"} {
		in, err := os.Open(path + suffix)
		if err != nil {
			t.Fatal(err)
		}
		out, err := os.Create(to + suffix)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(out, in); err != nil {
			t.Fatal(err)
		}
		in.Close()
		if err := out.Close(); err != nil {
			t.Fatal(err)
		}
	}
	return openPlain(t, to)
}

// wantRuns checks that c holds runs 0..n-1 of walRun(prefix, i), whole.
func wantRuns(t *testing.T, c *sql.DB, prefix string, n int) {
	t.Helper()
	for i := range n {
		_, r := walRun(prefix, i)
		var got string
		if err := c.QueryRow("SELECT run_data FROM agno_runs WHERE run_id = ?", r.RunID).Scan(&got); err != nil || got != string(r.RunData) {
			t.Fatalf("run %d: %d bytes, %v; want %d", i, len(got), err, len(r.RunData))
		}
	}
}

// TestWAL_ARolledBackSpillNeverOverwritesAnotherWriter: the writer spills
// frames of a transaction and rolls it back; another connection (SQLite's
// own VFS, as another process) then commits frames at the same offsets of
// the WAL; the writer then reads and writes again. The rolled-back frames
// must never reach the file over the other connection's commit.
func TestWAL_ARolledBackSpillNeverOverwritesAnotherWriter(t *testing.T) {
	dir, path, w := openWriter(t)
	other := openPlain(t, path)
	exec := func(c *sql.DB, q string, args ...any) {
		t.Helper()
		if _, err := c.ExecContext(ctx, q, args...); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	exec(w, "CREATE TABLE t (k INTEGER PRIMARY KEY, v TEXT)")
	exec(w, "PRAGMA cache_size = 4")
	for round := range 5 {
		tx, err := w.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		for k := range 12 { // ~12 pages appended: spilled, never read back
			if _, err := tx.ExecContext(ctx, "INSERT INTO t (k, v) VALUES (?, ?)", 100_000*(round+1)+k, strings.Repeat("r", 3000)); err != nil {
				t.Fatal(err)
			}
		}
		if err := tx.Rollback(); err != nil {
			t.Fatal(err)
		}
		for k := range 10 {
			exec(other, "INSERT INTO t (k, v) VALUES (?, ?)", 1000*round+k, strings.Repeat("o", 3000))
		}
		var n int
		err = w.QueryRowContext(ctx, "SELECT count(*) FROM t").Scan(&n)
		if want := 11*round + 10; err != nil || n != want { // 10 a round, and the writer's row of each earlier round
			t.Fatalf("round %d: the writer counts %d rows, %v; want %d", round, n, err, want)
		}
		exec(w, "INSERT INTO t (k, v) VALUES (?, ?)", 1000*round+500, "w")
	}
	exec(w, "PRAGMA cache_size = -2000")
	for _, c := range []*sql.DB{other, copyOpen(t, dir, path)} {
		wantIntact(t, c)
		var n, stray int
		if err := c.QueryRow("SELECT count(*), count(*) FILTER (WHERE k >= 100000) FROM t").Scan(&n, &stray); err != nil || n != 55 || stray != 0 {
			t.Fatalf("t holds %d rows, %d of them rolled back, %v; want 55 and none", n, stray, err)
		}
	}
}
