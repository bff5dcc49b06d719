package codemode_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentryhq/agentry/codemode"
	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/sqlite"
)

func openSQLite(t testing.TB) (*db.DB, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "agentry.db")
	return reopen(t, path), path
}

func reopen(t testing.TB, path string) *db.DB {
	t.Helper()
	d, err := sqlite.Open(context.Background(), sqlite.Config{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

func runAs(t *testing.T, cm *codemode.CodeMode, session, user, code string) codemode.Cell {
	t.Helper()
	c, err := cm.Run(context.Background(), session, user, code)
	if err != nil {
		t.Fatalf("Run(%s, %s, %q): %v", session, user, code, err)
	}
	return c
}

// TestPersist_VariablesSurviveAServerRestart stores state with one CodeMode
// and reads it with another over a freshly opened database, as after a
// restart of the server.
func TestPersist_VariablesSurviveAServerRestart(t *testing.T) {
	t.Parallel()
	d, path := openSQLite(t)
	cm := newCM(t, codemode.Config{Persist: true, DB: d, Namespace: "codemode/analyst"})
	c := runAs(t, cm, "s1", "alice", `const cities = ["Paris", "Rome"]
let totals = {n: 2, avg: 23.25, nested: [{ok: true}, null]}
function fmt(c) { return c.toUpperCase() + "!" }
const twice = x => x * 2
class Point { constructor(x) { this.x = x } }
const seen = new Map([["a", 1]])
const when = new Date(0)
let nothing`)
	wantOK(t, c)
	if !strings.Contains(c.Notice, "seen (a Map is not JSON-serialisable") {
		t.Errorf("the model was not told the Map is not saved: %q", c.Notice)
	}
	cm.Close()
	d.Close()

	cm2 := newCM(t, codemode.Config{Persist: true, DB: reopen(t, path), Namespace: "codemode/analyst"})
	c = runAs(t, cm2, "s1", "alice", `[cities, totals, fmt("x"), twice(21), new Point(3).x, typeof seen, when]`)
	if got := jsonText(resultOf(t, c)); got != `[["Paris","Rome"],{"avg":23.25,"n":2,"nested":[{"ok":true},null]},"X!",42,3,"undefined","1970-01-01T00:00:00.000Z"]` {
		t.Fatalf("restored state: %s", got)
	}
	if !strings.Contains(c.Notice, "restored") || !strings.Contains(c.Notice, "from the saved state of this session") {
		t.Errorf("notice = %q", c.Notice)
	}
}

func TestPersist_VariablesSurviveRunsAndIdleEviction(t *testing.T) {
	t.Parallel()
	d, _ := openSQLite(t)
	cm := newCM(t, codemode.Config{Persist: true, DB: d, IdleTTL: 20 * time.Millisecond})
	runAs(t, cm, "s", "u", "let count = 1")
	if c := runAs(t, cm, "s", "u", "count += 1; count"); resultOf(t, c) != float64(2) {
		t.Fatalf("second cell: %s", c.JSON())
	}
	waitFor(t, "eviction", func() bool { return cm.Sessions() == 0 })
	if c := runAs(t, cm, "s", "u", "count"); resultOf(t, c) != float64(2) {
		t.Fatalf("after eviction: %s", c.JSON())
	}
}

func TestPersist_AnotherUsersStateIsNeverLoaded(t *testing.T) {
	t.Parallel()
	d, path := openSQLite(t)
	cm := newCM(t, codemode.Config{Persist: true, DB: d})
	runAs(t, cm, "alice-session", "alice", "let secret = 'alice only'")
	cm.Close()

	cm2 := newCM(t, codemode.Config{Persist: true, DB: reopen(t, path)})
	for _, user := range []string{"bob", ""} {
		if _, err := cm2.Run(context.Background(), "alice-session", user, "secret"); !errors.Is(err, codemode.ErrForeignSession) {
			t.Fatalf("user %q on alice's session: err = %v, want ErrForeignSession", user, err)
		}
	}
	if err := cm2.Restart(context.Background(), "alice-session", "bob"); !errors.Is(err, codemode.ErrForeignSession) {
		t.Fatalf("bob restarting alice's session: %v", err)
	}
	// Bob's own new session does not start from alice's latest state.
	if c := runAs(t, cm2, "bob-session", "bob", "typeof secret"); resultOf(t, c) != "undefined" {
		t.Fatalf("bob's session: %s", c.JSON())
	}
	// Alice's state is intact and hers.
	if c := runAs(t, cm2, "alice-session", "alice", "secret"); resultOf(t, c) != "alice only" {
		t.Fatalf("alice: %s", c.JSON())
	}
}

func TestPersist_ANewSessionOfTheSameUserStartsFromTheirLatestState(t *testing.T) {
	t.Parallel()
	d, _ := openSQLite(t)
	cm := newCM(t, codemode.Config{Persist: true, DB: d})
	runAs(t, cm, "monday", "alice", "let notes = ['a']")
	runAs(t, cm, "monday", "alice", "notes.push('b')")
	c := runAs(t, cm, "tuesday", "alice", "notes")
	if jsonText(resultOf(t, c)) != `["a","b"]` || !strings.Contains(c.Notice, "your latest session") {
		t.Fatalf("tuesday: %s", c.JSON())
	}
}

func TestPersist_RestartClearsTheSavedState(t *testing.T) {
	t.Parallel()
	d, path := openSQLite(t)
	cm := newCM(t, codemode.Config{Persist: true, DB: d})
	runAs(t, cm, "s", "u", "let x = 1")
	if err := cm.Restart(context.Background(), "s", "u"); err != nil {
		t.Fatal(err)
	}
	cm.Close()
	cm2 := newCM(t, codemode.Config{Persist: true, DB: reopen(t, path)})
	if c := runAs(t, cm2, "s", "u", "typeof x"); resultOf(t, c) != "undefined" {
		t.Fatalf("after restart: %s", c.JSON())
	}
}

func TestPersist_SizeLimitsSkipVariables(t *testing.T) {
	t.Parallel()
	d, _ := openSQLite(t)
	cm := newCM(t, codemode.Config{Persist: true, DB: d, MaxVariableBytes: 100, MaxSnapshotBytes: 100})
	c := runAs(t, cm, "s", "u", `let small = "ok"; let big = "x".repeat(500); let medium1 = "m".repeat(60); let medium2 = "n".repeat(60)`)
	wantOK(t, c)
	for _, want := range []string{"big (over the 100-byte limit for one variable)", "medium2 (the saved state is limited to 100 bytes)"} {
		if !strings.Contains(c.Notice, want) {
			t.Errorf("notice %q lacks %q", c.Notice, want)
		}
	}
	f, err := d.GetFile(context.Background(), "codemode", "sessions/s")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Owner string `json:"owner"`
		Vars  []struct {
			Name string `json:"name"`
		} `json:"vars"`
	}
	if err := json.Unmarshal(f.Content, &doc); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, v := range doc.Vars {
		names = append(names, v.Name)
	}
	if strings.Join(names, ",") != "small,medium1" || doc.Owner != "u" {
		t.Fatalf("saved %v (owner %q), want small,medium1 owned by u", names, doc.Owner)
	}
	// Unchanged state is not written again, even in a later second (the
	// snapshot's saved_at is not part of what changed).
	time.Sleep(time.Until(time.Now().Truncate(time.Second).Add(time.Second)))
	runAs(t, cm, "s", "u", "1 + 1")
	f2, _ := d.GetFile(context.Background(), "codemode", "sessions/s")
	if f2.Version != f.Version {
		t.Errorf("an unchanged state was written again (version %d -> %d)", f.Version, f2.Version)
	}
}

func TestPersist_ConfigNeedsADatabase(t *testing.T) {
	t.Parallel()
	_, err := codemode.New(codemode.Config{Persist: true})
	if err == nil || !strings.Contains(err.Error(), "Persist needs Config.DB") {
		t.Fatalf("err = %v", err)
	}
}

// lockedBuffer is a log destination safe for concurrent writes.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// A session's saved state that cannot be read (corrupt bytes, or a format
// of another version) still belongs to the user it names: another user gets
// ErrForeignSession, as for a readable one, instead of a fresh environment
// whose first save would take the session's state over. Its owner starts
// empty with a logged warning and a notice, never from another session's
// state (their latest) as if the session were new; the unreadable row is
// replaced by the next save.
func TestPersist_UnreadableStateStartsFreshAndStaysTheOwners(t *testing.T) {
	t.Parallel()
	for name, content := range map[string]string{
		"older format": `{"version":0,"owner":"alice","session_id":"s","vars":[{"name":"secret","json":"\"alice only\""}]}`,
		"newer format": `{"version":99,"owner":"alice","session_id":"s","vars":{"secret":"alice only"}}`,
		"wrong types":  `{"version":"1","owner":"alice","vars":"secret"}`,
		"truncated":    `{"version":1,"owner":"alice","session_id":"s","vars":[{"name":"secret","json":"\"alice`,
		"not JSON":     "\x00\xffgarbage",
		"null":         `null`,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			d, _ := openSQLite(t)
			logs := &lockedBuffer{}
			cfg := codemode.Config{Persist: true, DB: d, Logger: slog.New(slog.NewTextHandler(logs, nil))}
			cm := newCM(t, cfg)
			runAs(t, cm, "other", "alice", "let latest = 'from another session'")
			runAs(t, cm, "s", "alice", "let secret = 'alice only'")
			cm.Close()
			if _, err := d.PutFile(ctx, &db.File{Namespace: codemode.DefaultNamespace, Path: "sessions/s", Content: []byte(content)}); err != nil {
				t.Fatal(err)
			}

			cm2 := newCM(t, cfg)
			owned := strings.Contains(content, `"owner":"alice"`)
			if owned {
				if _, err := cm2.Run(ctx, "s", "bob", "typeof secret"); !errors.Is(err, codemode.ErrForeignSession) {
					t.Fatalf("bob on alice's unreadable state: err = %v, want ErrForeignSession", err)
				}
				if err := cm2.Restart(ctx, "s", "bob"); !errors.Is(err, codemode.ErrForeignSession) {
					t.Fatalf("bob restarting alice's unreadable state: %v", err)
				}
			}
			c := runAs(t, cm2, "s", "alice", "[typeof secret, typeof latest]")
			if got := jsonText(resultOf(t, c)); got != `["undefined","undefined"]` || !strings.Contains(c.Notice, "could not be read") {
				t.Fatalf("alice on her unreadable state: %s (notice %q)", got, c.Notice)
			}
			if !strings.Contains(logs.String(), "unreadable snapshot") || !strings.Contains(logs.String(), "path=sessions/s") {
				t.Fatalf("no warning logged: %s", logs.String())
			}
			// The next save replaced the row: a restart reads alice's state.
			runAs(t, cm2, "s", "alice", "let again = 2")
			cm2.Close()
			cm3 := newCM(t, cfg)
			if c := runAs(t, cm3, "s", "alice", "again"); jsonText(resultOf(t, c)) != "2" {
				t.Fatalf("after the save: %s", c.JSON())
			}
			if _, err := cm3.Run(ctx, "s", "bob", "1"); !errors.Is(err, codemode.ErrForeignSession) {
				t.Fatalf("bob after alice's save: %v", err)
			}
		})
	}
}

// TestPersist_AVariableThatThrowsWhenSavedIsSkipped: saving reads every
// global, running its getter or toJSON; an exception thrown there was
// taken for a failure of the interpreter, and the session's environment
// was dropped after its next cell. It must skip that variable (telling the
// model) and save the others.
func TestPersist_AVariableThatThrowsWhenSavedIsSkipped(t *testing.T) {
	t.Parallel()
	d, path := openSQLite(t)
	cm := newCM(t, codemode.Config{Persist: true, DB: d})
	c := runAs(t, cm, "s", "u", `var good = 1; var bad = {toJSON() { throw new Error('no') }}
Object.defineProperty(globalThis, 'worse', {get() { throw new Error('no') }, enumerable: true, configurable: true})
var worst = {toJSON() { throw {toString() { throw new Error('again') }} }}; 1`)
	wantOK(t, c)
	if !strings.Contains(c.Notice, "bad (") || !strings.Contains(c.Notice, "worse (") || !strings.Contains(c.Notice, "worst (") || strings.Contains(c.Notice, "could not be saved") {
		t.Errorf("notice %q, want bad, worse and worst named as not saved", c.Notice)
	}
	for i := 2; i <= 3; i++ {
		c = runAs(t, cm, "s", "u", "good = good + 1")
		if c.ExecutionCount != i || string(c.Result) != fmt.Sprint(i) {
			t.Fatalf("cell %d: %s, want the environment kept", i, c.JSON())
		}
	}
	cm.Close()
	cm2 := newCM(t, codemode.Config{Persist: true, DB: reopen(t, path)})
	c = runAs(t, cm2, "s", "u", "[good, typeof bad]")
	if got := jsonText(resultOf(t, c)); got != `[3,"undefined"]` {
		t.Errorf("restored %s (%s)", got, c.JSON())
	}
}
