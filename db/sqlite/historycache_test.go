package sqlite_test

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/sqlite"
	"github.com/agentryhq/agentry/internal/sqlstore"
	"github.com/agentryhq/agentry/run"
)

// historyShapes are the history queries the cache is checked with: limits
// below, at and above the runs a session gets, with and without the agent
// condition and the user scope.
var historyShapes = []struct {
	agent string
	user  string // "" unscoped
	limit int
}{
	{"a1", "", 3}, {"a1", "", 26}, {"", "", 1}, {"", "", 4}, {"a1", "u1", 3}, {"", "u1", 26}, {"a2", "u2", 2},
}

// checkHistoryCache reads every history shape of session sid twice: as a
// turn does (ReadOnlySession, naming every run it holds, so the cache may
// answer) and without the cache (ReadOnlySession false is never served
// from it), and fails unless both answers are the same.
func checkHistoryCache(t *testing.T, d *db.DB, sid, step string) {
	t.Helper()
	for _, sh := range historyShapes {
		ctx := context.Background()
		if sh.user != "" {
			ctx = db.WithUserScope(ctx, sh.user)
		}
		q := db.HistoryQuery{SessionID: sid, AgentID: sh.agent, Limit: sh.limit}
		wantS, want, wantErr := d.SessionHistoryRefs(ctx, q)
		q.ReadOnlySession = true
		// The caller holds every run of the session as stored (a client's
		// cache also holds runs that are not in its history): a run the
		// cache wrongly has in an answer is then served, not read again.
		q.Cached = storedRuns(t, d, sid)
		// Twice: the first may store the answer, the second then hits.
		for range 2 {
			gotS, got, gotErr := d.SessionHistoryRefs(ctx, q)
			where := fmt.Sprintf("%s, shape %+v", step, sh)
			if !errors.Is(gotErr, db.ErrNotFound) || !errors.Is(wantErr, db.ErrNotFound) {
				if gotErr != nil || wantErr != nil {
					t.Fatalf("%s: error %v, want %v", where, gotErr, wantErr)
				}
			}
			if wantErr != nil {
				continue
			}
			if !sameSession(gotS, wantS) {
				t.Fatalf("%s: session\n%+v\nwant\n%+v", where, gotS, wantS)
			}
			if len(got) != len(want) {
				t.Fatalf("%s: %d runs %v, want %d %v", where, len(got), refIDs(got), len(want), refIDs(want))
			}
			for i := range got {
				if got[i].RunID != want[i].RunID || got[i].UpdatedAt != want[i].UpdatedAt {
					t.Fatalf("%s: runs %v, want %v", where, refIDs(got), refIDs(want))
				}
				if got[i].RunData != nil && !bytes.Equal(got[i].RunData, want[i].RunData) {
					t.Fatalf("%s: run %s's run_data differs", where, got[i].RunID)
				}
			}
		}
	}
}

// storedRuns lists the session's runs as stored, newest first.
func storedRuns(t *testing.T, d *db.DB, sid string) []db.CachedRun {
	t.Helper()
	st, _ := sqlstore.FromDB(d)
	rows, err := st.ReadSQL().Query("SELECT run_id, updated_at, octet_length(run_data) FROM agno_runs WHERE session_id = ? ORDER BY run_index DESC", sid)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []db.CachedRun
	for rows.Next() {
		var c db.CachedRun
		if err := rows.Scan(&c.RunID, &c.UpdatedAt, &c.Size); err != nil {
			t.Fatal(err)
		}
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func refIDs(refs []db.HistoryRef) []string {
	out := make([]string, len(refs))
	for i, r := range refs {
		out[i] = fmt.Sprintf("%s@%d", r.RunID, r.UpdatedAt)
	}
	return out
}

func sameSession(a, b *db.Session) bool {
	if a == nil || b == nil {
		return a == b
	}
	x, y := *a, *b
	for _, p := range [][2]*[]byte{
		{(*[]byte)(&x.SessionData), (*[]byte)(&y.SessionData)}, {(*[]byte)(&x.AgentData), (*[]byte)(&y.AgentData)},
		{(*[]byte)(&x.TeamData), (*[]byte)(&y.TeamData)}, {(*[]byte)(&x.WorkflowData), (*[]byte)(&y.WorkflowData)},
		{(*[]byte)(&x.Metadata), (*[]byte)(&y.Metadata)}, {(*[]byte)(&x.Summary), (*[]byte)(&y.Summary)},
	} {
		if !bytes.Equal(*p[0], *p[1]) {
			return false
		}
		*p[0], *p[1] = nil, nil
	}
	return reflect.DeepEqual(x, y)
}

// historyOps drives a session through random writes of every kind that can
// change a history: the store's own run saves (new runs and updates, with
// and without the session row, scoped or not, of either agent, any status,
// member runs), its other writes, and writes the cache does not see (raw
// SQL on the store's writer, on a connection of its own, and, when
// foreign is set, by another process). After each, every history shape
// must read the same from the cache as from the database.
func historyOps(t *testing.T, d *db.DB, seed uint64, steps int, foreign func(stmt string, args ...any)) {
	st, ok := sqlstore.FromDB(d)
	if !ok {
		t.Fatal("not a sqlstore")
	}
	rng := rand.New(rand.NewPCG(seed, 7))
	ctx := context.Background()
	const sid = "s"
	statuses := []run.Status{run.StatusCompleted, run.StatusCompleted, run.StatusRunning, run.StatusError,
		run.StatusCancelled, run.StatusPaused, ""}
	var ids []string
	now := time.Now().Unix()
	sess := func(user string) *db.Session {
		return &db.Session{SessionID: sid, SessionType: run.TypeAgent, AgentID: "a1", UserID: user,
			SessionData: []byte(fmt.Sprintf(`{"session_name":"n%d"}`, rng.IntN(1000)))}
	}
	if _, err := d.UpsertSession(ctx, sess("u1")); err != nil {
		t.Fatal(err)
	}
	for i := range steps {
		now++
		var step string
		switch op := rng.IntN(20); {
		case op < 11: // a run save, new or an update
			id := fmt.Sprintf("r%d", len(ids))
			if len(ids) > 0 && rng.IntN(4) == 0 {
				id = ids[rng.IntN(len(ids))]
			} else {
				ids = append(ids, id)
			}
			o := &run.Output{RunID: id, SessionID: sid, AgentID: []string{"a1", "a1", "a2"}[rng.IntN(3)],
				Status: statuses[rng.IntN(len(statuses))], Content: fmt.Sprintf("answer %d", rng.IntN(1e6)), CreatedAt: now}
			if rng.IntN(8) == 0 {
				o.ParentRunID = "p"
			}
			r, err := db.RunFromOutput(o)
			if err != nil {
				t.Fatal(err)
			}
			r.UserID = []string{"u1", "u1", "u2"}[rng.IntN(3)]
			if rng.IntN(6) == 0 {
				// A run that brings its run_index (db.WithRunIndex's
				// callers): it may tie with another run or be older than
				// the history's runs.
				idx := int64(rng.IntN(len(ids) + 1))
				r.RunIndex = &idx
			}
			wctx := ctx
			if rng.IntN(3) == 0 {
				wctx = db.WithUserScope(ctx, "u1")
			}
			var s *db.Session
			if rng.IntN(2) == 0 {
				s = sess([]string{"u1", "u1", "u2", ""}[rng.IntN(4)])
			}
			// A scoped save of another user's run or session is refused.
			if _, _, err := d.SaveRun(wctx, s, r); err != nil && !errors.Is(err, db.ErrNotFound) {
				t.Fatalf("step %d: save %s: %v", i, id, err)
			}
			step = fmt.Sprintf("step %d: save %s (%s, %s, session %v)", i, id, o.AgentID, o.Status, s != nil)
		case op < 12:
			if _, err := d.UpsertSession(ctx, sess([]string{"u1", "u1", "u2", ""}[rng.IntN(4)])); err != nil && !errors.Is(err, db.ErrNotFound) {
				t.Fatal(err)
			}
			step = fmt.Sprintf("step %d: session", i)
		case op < 13 && len(ids) > 0:
			id := ids[rng.IntN(len(ids))]
			if err := d.DeleteRun(ctx, id); err != nil && !errors.Is(err, db.ErrNotFound) {
				t.Fatal(err)
			}
			step = fmt.Sprintf("step %d: delete %s", i, id)
		case op < 16 && len(ids) > 0: // raw SQL on the store's own writer
			id := ids[rng.IntN(len(ids))]
			if _, err := st.SQL().ExecContext(ctx, "UPDATE agno_runs SET status = ?, updated_at = ? WHERE run_id = ?",
				string(statuses[rng.IntN(len(statuses))]), now, id); err != nil {
				t.Fatal(err)
			}
			step = fmt.Sprintf("step %d: writer SQL on %s", i, id)
		case len(ids) > 0 && foreign != nil: // another connection or process
			id := ids[rng.IntN(len(ids))]
			switch rng.IntN(3) {
			case 0:
				foreign("UPDATE agno_runs SET agent_id = ?, updated_at = ? WHERE run_id = ?", []string{"a1", "a2"}[rng.IntN(2)], now, id)
			case 1:
				foreign("UPDATE agno_runs SET run_data = ? WHERE run_id = ?", fmt.Sprintf(`{"run_id":%q,"content":"x%d"}`, id, rng.IntN(1e6)), id)
			default:
				foreign("UPDATE agno_sessions SET session_data = ? WHERE session_id = ?", fmt.Sprintf(`{"session_name":"f%d"}`, rng.IntN(1e6)), sid)
			}
			step = fmt.Sprintf("step %d: foreign write on %s", i, id)
		default:
			continue
		}
		checkHistoryCache(t, d, sid, step)
	}
	if hits, stored := st.HistoryCacheStats(); hits == 0 || stored == 0 {
		t.Fatalf("the history cache was not used: %d hits, %d answers stored", hits, stored)
	}
}

// TestHistoryCache_SameAsTheDatabase: on the default file, with writes by
// another connection of the process and by another process.
func TestHistoryCache_SameAsTheDatabase(t *testing.T) {
	if path := os.Getenv(foreignChildEnv); path != "" {
		foreignWrite(path)
	}
	t.Parallel()
	path := filepath.Join(t.TempDir(), "agentry.db")
	d, err := sqlite.Open(context.Background(), sqlite.Config{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	other, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { other.Close() })
	n := 0
	foreign := func(stmt string, args ...any) {
		t.Helper()
		n++
		if n%4 != 0 { // one in four from another process: each is a process start
			if _, err := other.Exec(stmt, args...); err != nil {
				t.Fatal(err)
			}
			return
		}
		foreignProcess(t, path, stmt, args...)
	}
	historyOps(t, d, 1, 250, foreign)
}

// TestHistoryCache_SameAsTheDatabaseExclusive: on an exclusive file (the
// WAL index in the process's memory), where no other process can write.
func TestHistoryCache_SameAsTheDatabaseExclusive(t *testing.T) {
	t.Parallel()
	d, err := sqlite.Open(context.Background(), sqlite.Config{Path: filepath.Join(t.TempDir(), "agentry.db"), Exclusive: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	historyOps(t, d, 2, 300, nil)
}

// TestHistoryCache_Seeds runs more sequences, without other processes.
func TestHistoryCache_Seeds(t *testing.T) {
	t.Parallel()
	for seed := uint64(10); seed < 14; seed++ {
		path := filepath.Join(t.TempDir(), fmt.Sprintf("s%d.db", seed))
		d, err := sqlite.Open(context.Background(), sqlite.Config{Path: path})
		if err != nil {
			t.Fatal(err)
		}
		other, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(5000)")
		if err != nil {
			t.Fatal(err)
		}
		historyOps(t, d, seed, 150, func(stmt string, args ...any) {
			if _, err := other.Exec(stmt, args...); err != nil {
				t.Fatal(err)
			}
		})
		other.Close()
		d.Close()
	}
}

// foreignProcess runs stmt on the file from a child process: this test
// binary running TestHistoryCache_SameAsTheDatabase as foreignWrite.
func foreignProcess(t *testing.T, path, stmt string, args ...any) {
	t.Helper()
	cmd := childCmd("TestHistoryCache_SameAsTheDatabase", foreignChildEnv, path)
	cmd.Env = append(cmd.Env, "AGENTRY_FOREIGN_STMT="+stmt, "AGENTRY_FOREIGN_ARGS="+encodeArgs(args))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("foreign process: %v\n%s", err, out)
	}
}

// foreignChildEnv names the database file foreignWrite writes to.
const foreignChildEnv = "AGENTRY_TEST_FOREIGN_DB"

func encodeArgs(args []any) string {
	var b bytes.Buffer
	for i, a := range args {
		if i > 0 {
			b.WriteByte(0x1f)
		}
		fmt.Fprint(&b, a)
	}
	return b.String()
}

// foreignWrite is foreignProcess's child: one statement on the file, on a
// connection of SQLite's own VFS.
func foreignWrite(path string) {
	c, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(5000)")
	if err == nil {
		var args []any
		for _, a := range bytes.Split([]byte(os.Getenv("AGENTRY_FOREIGN_ARGS")), []byte{0x1f}) {
			args = append(args, string(a))
		}
		_, err = c.Exec(os.Getenv("AGENTRY_FOREIGN_STMT"), args...)
		if cerr := c.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	os.Exit(0)
}

// TestHistoryCache_ConcurrentConversations: conversations on several
// sessions at once, their run writes sharing group commits; each session's
// history read through the cache must be its database answer every turn.
func TestHistoryCache_ConcurrentConversations(t *testing.T) {
	t.Parallel()
	d := openTemp(t)
	st, _ := sqlstore.FromDB(d)
	const sessions, turns = 8, 30
	errs := make(chan error, sessions)
	for g := range sessions {
		go func() {
			errs <- conversationTurns(d, fmt.Sprintf("c%d", g), turns)
		}()
	}
	for range sessions {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if hits, _ := st.HistoryCacheStats(); hits == 0 {
		t.Fatal("no history read was answered from the cache")
	}
}

// conversationTurns runs turns of a conversation on sid as an agent does:
// read the session and history (naming the runs it holds), then save the
// run and, every other turn, the session row.
func conversationTurns(d *db.DB, sid string, turns int) error {
	ctx := context.Background()
	var held []db.CachedRun // newest first
	for i := range turns {
		q := db.HistoryQuery{SessionID: sid, AgentID: "a1", Limit: 3}
		_, want, wantErr := d.SessionHistoryRefs(ctx, q)
		q.ReadOnlySession, q.Cached = true, held
		_, got, gotErr := d.SessionHistoryRefs(ctx, q)
		if (wantErr == nil) != (gotErr == nil) {
			return fmt.Errorf("%s turn %d: error %v, want %v", sid, i, gotErr, wantErr)
		}
		if fmt.Sprint(refIDs(got)) != fmt.Sprint(refIDs(want)) {
			return fmt.Errorf("%s turn %d: runs %v, want %v", sid, i, refIDs(got), refIDs(want))
		}
		r, err := db.RunFromOutput(&run.Output{RunID: fmt.Sprintf("%s-r%d", sid, i), SessionID: sid, AgentID: "a1",
			Status: run.StatusCompleted, Content: fmt.Sprintf("answer %d", i), CreatedAt: time.Now().Unix()})
		if err != nil {
			return err
		}
		var s *db.Session
		if i%2 == 0 {
			s = &db.Session{SessionID: sid, SessionType: run.TypeAgent, AgentID: "a1", SessionData: []byte(fmt.Sprintf(`{"session_name":"t%d"}`, i))}
		}
		_, out, err := d.SaveRun(ctx, s, r)
		if err != nil {
			return err
		}
		held = append([]db.CachedRun{{RunID: out.RunID, UpdatedAt: out.UpdatedAt, Size: len(out.RunData)}}, held...)
	}
	return nil
}
