package sqlite_test

import (
	"errors"
	"fmt"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/sqlite"
	"github.com/agentryhq/agentry/run"
)

// exclusiveChildEnv makes the test binary a reader child (exclusiveReader).
const exclusiveChildEnv = "AGENTRY_TEST_SQLITE_EXCLUSIVE_READER"

// Exit codes of exclusiveReader.
const (
	childRead   = 0 // opened the file and read the session
	childLocked = 3 // the file is locked (db.ErrUnavailable)
	childFailed = 4 // anything else
)

// readFromOtherProcess runs this test binary as another process that opens
// path (not exclusive, 300 ms busy timeout) and reads session s1.
func readFromOtherProcess(t *testing.T, path string) (code int, output string) {
	t.Helper()
	cmd := osexec.Command(os.Args[0], "-test.run=^TestExclusive_AnotherProcessCannotOpenTheFile$", "-test.count=1")
	cmd.Env = append(os.Environ(), exclusiveChildEnv+"="+path)
	out, err := cmd.CombinedOutput()
	var exit *osexec.ExitError
	switch {
	case err == nil:
		return 0, string(out)
	case errors.As(err, &exit):
		return exit.ExitCode(), string(out)
	}
	t.Fatalf("reader child: %v: %s", err, out)
	return 0, ""
}

func exclusiveReader(path string) {
	d, err := sqlite.Open(ctx, sqlite.Config{Path: path, BusyTimeout: 300 * time.Millisecond, MustExist: true})
	if err == nil {
		defer d.Close()
		_, err = d.GetSession(ctx, "s1")
	}
	switch {
	case err == nil:
		os.Exit(childRead)
	case errors.Is(err, db.ErrUnavailable) && strings.Contains(err.Error(), "locked"):
		fmt.Fprintln(os.Stderr, err)
		os.Exit(childLocked)
	}
	fmt.Fprintln(os.Stderr, err)
	os.Exit(childFailed)
}

func saveSession(t testing.TB, d *db.DB, sid string) {
	t.Helper()
	if _, err := d.UpsertSession(ctx, &db.Session{SessionID: sid, SessionType: run.TypeAgent, AgentID: "a"}); err != nil {
		t.Fatal(err)
	}
}

// With Config.Exclusive the file is the opening process's: another process
// (here: a default open, as a Python Agno or `agentry migrate` would make)
// fails as locked while it is open, and reads it once it is closed.
func TestExclusive_AnotherProcessCannotOpenTheFile(t *testing.T) {
	if path := os.Getenv(exclusiveChildEnv); path != "" {
		exclusiveReader(path)
		return
	}
	path := filepath.Join(t.TempDir(), "excl.db")
	d, err := sqlite.Open(ctx, sqlite.Config{Path: path, Exclusive: true})
	if err != nil {
		t.Fatal(err)
	}
	saveSession(t, d, "s1")
	if code, out := readFromOtherProcess(t, path); code != childLocked {
		t.Fatalf("another process opening the exclusive file: exit %d, want %d (locked): %s", code, childLocked, out)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if code, out := readFromOtherProcess(t, path); code != childRead {
		t.Fatalf("another process after the exclusive open closed: exit %d, want %d (read): %s", code, childRead, out)
	}

	// Without it (the default) the file is shared, as Agno expects.
	shared, err := sqlite.Open(ctx, sqlite.Config{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	defer shared.Close()
	if code, out := readFromOtherProcess(t, path); code != childRead {
		t.Fatalf("another process beside a default open: exit %d, want %d (read): %s", code, childRead, out)
	}
}

// The process's own connections (the writer and the reader pool) share an
// exclusive file: readers see every committed write while writes go on,
// and never wait for the writer's lock.
func TestExclusive_WriterAndReadersShareTheFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "excl.db")
	d, err := sqlite.Open(ctx, sqlite.Config{Path: path, Exclusive: true, MaxReadConns: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	const writers, runs = 3, 40
	var wg sync.WaitGroup
	done := make(chan struct{})
	for w := range writers {
		wg.Go(func() {
			sid := fmt.Sprintf("s%d", w)
			s := &db.Session{SessionID: sid, SessionType: run.TypeAgent, AgentID: "a"}
			for i := range runs {
				rid := fmt.Sprintf("%s-r%d", sid, i)
				r := &db.Run{RunID: rid, SessionID: sid, RunType: run.TypeAgent, AgentID: "a", Status: run.StatusCompleted,
					RunData: []byte(fmt.Sprintf(`{"run_id":%q,"content":%q}`, rid, strings.Repeat("x", 2000)))}
				if _, _, err := d.SaveRun(ctx, s, r); err != nil {
					t.Error(err)
					return
				}
				// A reader sees the run as soon as its save returned.
				if got, err := d.GetRun(ctx, rid); err != nil || got.RunID != rid {
					t.Errorf("run %s after its save: %v", rid, err)
					return
				}
			}
		})
	}
	var readers sync.WaitGroup
	for range 2 {
		readers.Go(func() {
			seen := map[string]int{}
			for {
				select {
				case <-done:
					return
				default:
				}
				for w := range writers {
					sid := fmt.Sprintf("s%d", w)
					got, _, err := d.GetRuns(ctx, db.RunFilter{SessionID: sid, Limit: runs, Page: 1})
					n := len(got)
					if err != nil {
						t.Error(err)
						return
					}
					if n < seen[sid] {
						t.Errorf("session %s: %d runs after %d", sid, n, seen[sid])
						return
					}
					seen[sid] = n
				}
			}
		})
	}
	wg.Wait()
	close(done)
	readers.Wait()
	for w := range writers {
		if got, _, err := d.GetRuns(ctx, db.RunFilter{SessionID: fmt.Sprintf("s%d", w), Limit: runs, Page: 1}); err != nil || len(got) != runs {
			t.Fatalf("session s%d: %d runs (%v), want %d", w, len(got), err, runs)
		}
	}
	// The WAL index is in the process's memory, not a -shm file.
	if _, err := os.Stat(path + "-shm"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("an exclusive open has a -shm file (%v): its WAL index should be in memory", err)
	}
}

func TestExclusive_RefusedWhereItCannotWork(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ro.db")
	d, err := sqlite.Open(ctx, sqlite.Config{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	d.Close()
	for _, c := range []struct {
		what string
		cfg  sqlite.Config
		want string
	}{
		{"in memory", sqlite.Config{Path: ":memory:", Exclusive: true}, ":memory:"},
		{"read-only", sqlite.Config{Path: path, ReadOnly: true, Exclusive: true}, "ReadOnly"},
	} {
		d, err := sqlite.Open(ctx, c.cfg)
		if err == nil {
			d.Close()
			t.Errorf("%s: opened", c.what)
			continue
		}
		if !strings.Contains(err.Error(), "Exclusive") || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v; want an error naming Exclusive and %s", c.what, err, c.want)
		}
	}
}
