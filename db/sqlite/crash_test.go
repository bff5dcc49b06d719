package sqlite_test

import (
	"bufio"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/sqlite"
	"github.com/agentryhq/agentry/internal/sqlstore"
	"github.com/agentryhq/agentry/run"
)

// crashChildEnv makes the test binary a writer child (see crashWriter).
const crashChildEnv = "AGENTRY_TEST_SQLITE_CRASH_WRITER"

// crashKills is how many times the writer is killed.
const crashKills = 20

// TestSaveRun_KillNeverLeavesASessionWithoutItsRun kills a process storing
// runs (SaveRun: the session row, then its run) with SIGKILL at random
// moments, again and again on the same file, then checks that every session
// holds exactly the runs its session_data counts: a session row is never
// stored without the run written with it.
func TestSaveRun_KillNeverLeavesASessionWithoutItsRun(t *testing.T) {
	if path := os.Getenv(crashChildEnv); path != "" {
		crashWriter(path)
		return
	}
	t.Parallel()
	path := filepath.Join(t.TempDir(), "crash.db")
	for i := range crashKills {
		cmd, out, stderr := startChild(t, "TestSaveRun_KillNeverLeavesASessionWithoutItsRun", crashChildEnv, path)
		line, err := bufio.NewReader(out).ReadString('\n')
		if err != nil || line != "writing\n" {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			t.Fatalf("kill %d: writer did not start (%q, %v): %s", i, line, err, stderr.String())
		}
		time.Sleep(time.Duration(rand.IntN(30_000)) * time.Microsecond)
		if err := cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		_ = cmd.Wait()
	}

	d, err := sqlite.Open(ctx, sqlite.Config{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	st, _ := sqlstore.FromDB(d)
	wantIntact(t, st.SQL())
	runs := countsBy(t, st.SQL(), "SELECT session_id, COUNT(*) FROM agno_runs GROUP BY session_id")
	rows, err := st.SQL().QueryContext(ctx, "SELECT session_id, session_data FROM agno_sessions")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	sessions, broken := 0, []string{}
	for rows.Next() {
		var id string
		var data []byte
		if err := rows.Scan(&id, &data); err != nil {
			t.Fatal(err)
		}
		var sd struct {
			Runs int `json:"runs"`
		}
		if err := json.Unmarshal(data, &sd); err != nil {
			t.Fatalf("session %s: session_data %q: %v", id, data, err)
		}
		sessions++
		if runs[id] != sd.Runs {
			broken = append(broken, fmt.Sprintf("%s (session says %d runs, %d stored)", id, sd.Runs, runs[id]))
		}
	}
	if sessions == 0 {
		t.Fatal("the writers stored nothing")
	}
	if len(broken) > 0 {
		t.Fatalf("%d kills left %d of %d sessions without their runs: %s", crashKills, len(broken), sessions, strings.Join(broken, ", "))
	}
}

// wantIntact fails t unless SQLite's integrity_check passes on c.
func wantIntact(t *testing.T, c *sql.DB) {
	t.Helper()
	var check string
	if err := c.QueryRowContext(ctx, "PRAGMA integrity_check").Scan(&check); err != nil || check != "ok" {
		t.Fatalf("integrity_check = %q, %v", check, err)
	}
}

// countsBy runs q, which selects a text and a number per row, into a map.
func countsBy(t *testing.T, c *sql.DB, q string) map[string]int {
	t.Helper()
	rows, err := c.QueryContext(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	m := map[string]int{}
	for rows.Next() {
		var k string
		var n int
		if err := rows.Scan(&k, &n); err != nil {
			t.Fatal(err)
		}
		m[k] = n
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return m
}

// childCmd is this test binary running only the test name, with env set
// to path: the test then runs as a child (crashWriter and the like).
func childCmd(name, env, path string) *osexec.Cmd {
	cmd := osexec.Command(os.Args[0], "-test.run=^"+name+"$", "-test.count=1")
	cmd.Env = append(os.Environ(), env+"="+path)
	return cmd
}

// startChild starts childCmd: its stdout, and its stderr as collected.
func startChild(t *testing.T, name, env, path string) (*osexec.Cmd, io.Reader, *strings.Builder) {
	t.Helper()
	cmd := childCmd(name, env, path)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr := new(strings.Builder)
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd, out, stderr
}

// crashWriter stores runs until it is killed: three runs per session, each
// SaveRun writing the session with the count of its runs and the run. It
// says "writing" once its first run is stored.
func crashWriter(path string) {
	d, err := sqlite.Open(ctx, sqlite.Config{Path: path})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	prefix := fmt.Sprintf("p%d", os.Getpid())
	for i := 0; ; i++ {
		if i == 1 {
			fmt.Println("writing") // one run is stored: the parent may kill from now on
		}
		sid := fmt.Sprintf("%s-s%d", prefix, i/3)
		rid := fmt.Sprintf("%s-r%d", prefix, i)
		s := &db.Session{SessionID: sid, SessionType: run.TypeAgent, AgentID: "a", SessionData: []byte(fmt.Sprintf(`{"runs":%d}`, i%3+1))}
		r := &db.Run{RunID: rid, SessionID: sid, RunType: run.TypeAgent, AgentID: "a", Status: run.StatusCompleted,
			RunData: []byte(fmt.Sprintf(`{"run_id":%q,"content":%q}`, rid, strings.Repeat("x", 1500)))}
		if _, _, err := d.SaveRun(ctx, s, r); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
	}
}
