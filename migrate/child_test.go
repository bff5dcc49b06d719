package migrate_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentryhq/agentry/db/dsn"
	"github.com/agentryhq/agentry/db/mysql"
	"github.com/agentryhq/agentry/db/postgres"
	"github.com/agentryhq/agentry/db/sqlite"
	"github.com/agentryhq/agentry/migrate"
	"github.com/agentryhq/agentry/migrate/migratetest"
)

// TestMain lets the test binary act as a separate migrating process: with
// AGENTRY_MIGRATE_CHILD set it runs Up against the database the environment
// names, reports each batch on stdout, and exits.
func TestMain(m *testing.M) {
	if os.Getenv("AGENTRY_MIGRATE_CHILD") != "" {
		os.Exit(childUp())
	}
	os.Exit(m.Run())
}

func childUp() int {
	ctx := context.Background()
	// The child opens its database the way `agentry migrate up` does: by
	// DSN, through the db front.
	drivers := dsn.Drivers{SQLite: sqlite.OpenDSN, Postgres: postgres.OpenDSN, MySQL: mysql.OpenDSN}
	store, err := dsn.Open(ctx, os.Getenv("AGENTRY_MIGRATE_DSN"), drivers,
		dsn.Options{SkipSchemaCheck: true, MustExist: true, Schema: os.Getenv("AGENTRY_MIGRATE_SCHEMA")})
	if err != nil {
		fmt.Println("error", err)
		return 2
	}
	defer store.Close()
	batch, _ := strconv.Atoi(os.Getenv("AGENTRY_MIGRATE_BATCH"))
	mgr, release, err := migrate.ForDB(store, migrate.Config{BatchSize: batch,
		Progress: func(p migrate.Progress) {
			fmt.Printf("progress %d %d\n", p.SessionsDone, p.RunsCopied)
			time.Sleep(5 * time.Millisecond) // leave the parent time to kill between and inside batches
		}})
	if err != nil {
		fmt.Println("error", err)
		return 2
	}
	defer release()
	sum, err := mgr.Up(ctx, "")
	if err != nil {
		fmt.Println("error", err)
		return 1
	}
	fmt.Printf("done %d %d\n", sum.RunsCopied, sum.BadRowCount)
	return 0
}

// child is a migrating process started from the test binary.
type child struct {
	cmd   *exec.Cmd
	lines chan string
}

func startChild(t testing.TB, f *fixtureDB, batch int) *child {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "AGENTRY_MIGRATE_CHILD=1", "AGENTRY_MIGRATE_DSN="+f.dsn,
		"AGENTRY_MIGRATE_SCHEMA="+f.layout.Schema, "AGENTRY_MIGRATE_BATCH="+strconv.Itoa(batch))
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &child{cmd: cmd, lines: make(chan string, 1024)}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			c.lines <- sc.Text()
		}
		close(c.lines)
	}()
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return c
}

// killAfter SIGKILLs the child once it reported n batches; false if it
// finished first.
func (c *child) killAfter(t *testing.T, n int) bool {
	t.Helper()
	seen := 0
	for line := range c.lines {
		if strings.HasPrefix(line, "progress ") {
			if seen++; seen == n {
				if err := c.cmd.Process.Signal(syscall.SIGKILL); err != nil {
					t.Fatal(err)
				}
				_ = c.cmd.Wait()
				return true
			}
		}
		if strings.HasPrefix(line, "error") {
			t.Fatalf("child: %s", line)
		}
	}
	return false
}

// wait returns the child's final line.
func (c *child) wait(t testing.TB) string {
	t.Helper()
	last := ""
	for line := range c.lines {
		last = line
	}
	if err := c.cmd.Wait(); err != nil {
		t.Errorf("child exited with %v (last line %q)", err, last)
	}
	return last
}

func resumeFixture() []migratetest.Session {
	s := slices.Collect(migratetest.Generate(7, 150, 8, 600))
	return append(s, migratetest.Canonical()...)
}

// TestUp_ConvergesAfterTheMigratingProcessIsKilled kills a child process
// mid-copy (twice), then lets Up finish and compares every row.
func TestUp_ConvergesAfterTheMigratingProcessIsKilled(t *testing.T) {
	t.Parallel()
	for _, v := range []variant{variants[0], variants[3], variants[4]} {
		t.Run(v.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, v)
			sessions := resumeFixture()
			f.insert(t, sessions)
			want, wantBad := expectedRows(t, sessions)

			for _, after := range []int{3, 5} {
				if !startChild(t, f, 4).killAfter(t, after) {
					t.Fatalf("child finished before it could be killed")
				}
				st := statusOf(t, f.manager(t), migrate.KindSessions)
				if st.Current == migrate.Latest || st.CopyCheckpoint == "" {
					t.Fatalf("after kill: status %+v, want an unfinished copy with a checkpoint", st)
				}
				if n := len(f.readRuns(t)); n == 0 || n >= len(want) {
					t.Fatalf("after kill: %d of %d runs copied, want a partial copy", n, len(want))
				}
			}
			sum, err := f.manager(t).Up(context.Background(), "")
			if err != nil {
				t.Fatalf("Up after kills: %v", err)
			}
			compareRuns(t, f.readRuns(t), want)
			if sum.SessionsScanned == 0 || sum.SessionsScanned >= int64(len(sessions)) {
				t.Errorf("resumed Up scanned %d sessions, want it to skip the checkpointed ones", sum.SessionsScanned)
			}
			// The bad rows the killed attempts recorded are reported too.
			if sum.BadRowCount != int64(len(wantBad)) {
				t.Errorf("resumed Up reports %d bad rows, want all %d (earlier attempts' included)", sum.BadRowCount, len(wantBad))
			}
			var errRows int
			if err := f.db.QueryRow("SELECT count(*) FROM " + f.table("agno_migration_errors")).Scan(&errRows); err != nil || errRows != len(wantBad) {
				t.Errorf("errors table holds %d rows (%v), want %d", errRows, err, len(wantBad))
			}
			if st := statusOf(t, f.manager(t), migrate.KindSessions); st.CopyCheckpoint != "" || !st.UpToDate() {
				t.Errorf("after resume: %+v", st)
			}
			f.assertRunsIndexed(t)
			f.assertCascade(t, "s-team")
		})
	}
}

// TestUp_TwoProcessesAtOnceCopyOnce starts two migrating processes together:
// one copies, the other waits for the lock and finds nothing left to do.
func TestUp_TwoProcessesAtOnceCopyOnce(t *testing.T) {
	t.Parallel()
	for _, v := range []variant{variants[0], variants[3], variants[4]} {
		t.Run(v.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, v)
			sessions := resumeFixture()
			f.insert(t, sessions)
			want, _ := expectedRows(t, sessions)
			var wg sync.WaitGroup
			results := make([]string, 2)
			children := []*child{startChild(t, f, 20), startChild(t, f, 20)}
			for i, c := range children {
				wg.Go(func() { results[i] = c.wait(t) })
			}
			wg.Wait()
			var copied []int
			for _, r := range results {
				var n, bad int
				if _, err := fmt.Sscanf(r, "done %d %d", &n, &bad); err != nil {
					t.Fatalf("child result %q: %v", r, err)
				}
				copied = append(copied, n)
			}
			slices.Sort(copied)
			if copied[0] != 0 || copied[1] != len(want) {
				t.Errorf("runs copied by the two processes = %v, want [0 %d]", copied, len(want))
			}
			compareRuns(t, f.readRuns(t), want)
		})
	}
}
