package postgres

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/agentryhq/agentry/internal/groupcommit"
	"github.com/agentryhq/agentry/internal/sqlstore"
)

// groupTable opens a pool on the test server with a table t (k text) in a
// fresh schema, dropped after the test.
func groupTable(t *testing.T) (*sql.DB, string) {
	t.Helper()
	dsn := os.Getenv("AGENTRY_TEST_POSTGRES_DSN")
	if dsn == "" {
		dsn = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"
	}
	pc, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	pool := stdlib.OpenDB(*pc)
	b := make([]byte, 6)
	rand.Read(b)
	schema := "agentry_test_" + hex.EncodeToString(b)
	if _, err := pool.Exec(`CREATE SCHEMA ` + schema + `; CREATE TABLE ` + schema + `.t (k TEXT PRIMARY KEY)`); err != nil {
		t.Fatalf("postgres test server unavailable: %v", err)
	}
	t.Cleanup(func() {
		pool.Exec(`DROP SCHEMA ` + schema + ` CASCADE`)
		pool.Close()
	})
	return pool, schema + ".t"
}

// waitPending waits until n callers wait for the next group of pool.
func waitPending(t *testing.T, gs *pipeGroups, pool *sql.DB, n int) {
	t.Helper()
	g := gs.of(pool)
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		_, k := g.State()
		if k == n {
			return
		}
	}
	t.Fatalf("%d callers never queued behind the running pipeline", n)
}

// holdGroup starts a group of one on pool that stays in flight (its
// leader's row read waits) until release; wait waits for it to end.
func holdGroup(t *testing.T, gs *pipeGroups, pool *sql.DB) (release, wait func()) {
	t.Helper()
	hold, started := make(chan struct{}), make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		lead := sqlstore.PipelineStmt{Query: `SELECT 1`, Row: func(sc sqlstore.Scanner) error {
			close(started)
			<-hold
			var one int
			return sc.Scan(&one)
		}}
		if err := gs.pipeline(context.Background(), pool, []sqlstore.PipelineStmt{lead}); err != nil {
			t.Errorf("leader: %v", err)
		}
	})
	<-started
	return sync.OnceFunc(func() { close(hold) }), wg.Wait
}

// insertStmt inserts k and counts the reads of its row; fail makes the
// read fail (a fence that refuses).
func insertStmt(table, k string, reads *atomic.Int32, fail error) sqlstore.PipelineStmt {
	return sqlstore.PipelineStmt{Query: `INSERT INTO ` + table + ` (k) VALUES (?) RETURNING k`, Args: []any{k}, Row: func(sc sqlstore.Scanner) error {
		reads.Add(1)
		var got string
		if err := sc.Scan(&got); err != nil {
			return err
		}
		return fail
	}}
}

// The writes that queue behind a running pipeline go out as one
// transaction; when one of them fails there, the group is rolled back and
// each pipelines again alone: the others commit, the failing one gets its
// own error, and nothing is written twice.
func TestPipeGroup_SharesATransactionAndAFailingMemberFailsAlone(t *testing.T) {
	t.Parallel()
	pool, table := groupTable(t)
	gs := newPipeGroups()
	ctx := context.Background()
	errRefused := errors.New("refused")

	run := func(name string, keys []string, fail map[string]error) (map[string]error, map[string]*atomic.Int32) {
		hold := make(chan struct{})
		started := make(chan struct{})
		lead := sqlstore.PipelineStmt{Query: `INSERT INTO ` + table + ` (k) VALUES (?) RETURNING k`, Args: []any{name + "-lead"}, Row: func(sc sqlstore.Scanner) error {
			close(started)
			<-hold // the others queue meanwhile
			var k string
			return sc.Scan(&k)
		}}
		errs := map[string]error{}
		reads := map[string]*atomic.Int32{}
		var mu sync.Mutex
		var wg sync.WaitGroup
		wg.Go(func() {
			if err := gs.pipeline(ctx, pool, []sqlstore.PipelineStmt{lead}); err != nil {
				t.Errorf("leader: %v", err)
			}
		})
		<-started // the leader runs its own write
		for _, k := range keys {
			reads[k] = &atomic.Int32{}
			st := insertStmt(table, name+"-"+k, reads[k], fail[k])
			wg.Go(func() {
				err := gs.pipeline(ctx, pool, []sqlstore.PipelineStmt{st})
				mu.Lock()
				errs[k] = err
				mu.Unlock()
			})
		}
		waitPending(t, gs, pool, len(keys))
		close(hold)
		wg.Wait()
		return errs, reads
	}
	stored := func(prefix string) (keys, xids []string) {
		rows, err := pool.Query(`SELECT k, xmin::text FROM `+table+` WHERE k LIKE $1 ORDER BY k`, prefix+"-%")
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		for rows.Next() {
			var k, x string
			if err := rows.Scan(&k, &x); err != nil {
				t.Fatal(err)
			}
			keys, xids = append(keys, k), append(xids, x)
		}
		return keys, xids
	}

	errs, reads := run("ok", []string{"a", "b", "c"}, nil)
	for k, err := range errs {
		if err != nil || reads[k].Load() != 1 {
			t.Errorf("member %s: err %v, row read %d times (want nil, once)", k, err, reads[k].Load())
		}
	}
	keys, xids := stored("ok")
	if !slices.Equal(keys, []string{"ok-a", "ok-b", "ok-c", "ok-lead"}) {
		t.Fatalf("stored %v", keys)
	}
	if xids[0] != xids[1] || xids[1] != xids[2] || xids[2] == xids[3] {
		t.Errorf("transactions of a, b, c, lead: %v (want a, b, c in one, the leader's alone)", xids)
	}

	errs, reads = run("fail", []string{"a", "b", "c"}, map[string]error{"b": errRefused})
	if !errors.Is(errs["b"], errRefused) {
		t.Errorf("failing member: %v, want %v", errs["b"], errRefused)
	}
	if n := reads["b"].Load(); n != 2 {
		t.Errorf("failing member's row read %d times (want twice: in the group, then alone)", n)
	}
	for _, k := range []string{"a", "c"} {
		// Once more alone; in the group only when it came before b.
		if n := reads[k].Load(); errs[k] != nil || n < 1 || n > 2 {
			t.Errorf("member %s: err %v, row read %d times (want nil, once or twice)", k, errs[k], n)
		}
	}
	if keys, _ := stored("fail"); !slices.Equal(keys, []string{"fail-a", "fail-c", "fail-lead"}) {
		t.Fatalf("stored %v, want a, c and the leader's", keys)
	}
}

// A caller whose context ends while it waits for the next group leaves
// without writing.
func TestPipeGroup_WaitingCallerWithdrawsOnCancel(t *testing.T) {
	t.Parallel()
	pool, table := groupTable(t)
	gs := newPipeGroups()
	release, wait := holdGroup(t, gs, pool)
	ctx, cancel := context.WithCancel(context.Background())
	var reads atomic.Int32
	errc := make(chan error, 1)
	go func() {
		errc <- gs.pipeline(ctx, pool, []sqlstore.PipelineStmt{insertStmt(table, "gone", &reads, nil)})
	}()
	waitPending(t, gs, pool, 1)
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled caller: %v", err)
	}
	release()
	wait()
	var n int
	if err := pool.QueryRow(`SELECT count(*) FROM ` + table).Scan(&n); err != nil || n != 0 || reads.Load() != 0 {
		t.Errorf("rows %d (err %v), reads %d: the withdrawn write ran", n, err, reads.Load())
	}
}

// A write marked to commit alone (groupcommit.Alone: the
// durable queue's enqueue groups) commits while a group is in flight,
// where a shared write waits for it.
func TestPipeGroup_AloneCommitsBesideARunningGroup(t *testing.T) {
	t.Parallel()
	pool, table := groupTable(t)
	gs := newPipeGroups()
	release, wait := holdGroup(t, gs, pool)
	defer wait()
	defer release()

	var ownReads, sharedReads atomic.Int32
	shared := make(chan error, 1)
	go func() {
		shared <- gs.pipeline(context.Background(), pool, []sqlstore.PipelineStmt{insertStmt(table, "shared", &sharedReads, nil)})
	}()
	waitPending(t, gs, pool, 1) // the shared write waits for the group in flight

	ctx, cancel := context.WithTimeout(groupcommit.Alone(context.Background()), 10*time.Second)
	defer cancel()
	if err := gs.pipeline(ctx, pool, []sqlstore.PipelineStmt{insertStmt(table, "own", &ownReads, nil)}); err != nil {
		t.Fatalf("own transaction while a group is in flight: %v (it waited for the group)", err)
	}
	var n int
	if err := pool.QueryRow(`SELECT count(*) FROM ` + table + ` WHERE k = 'own'`).Scan(&n); err != nil || n != 1 || ownReads.Load() != 1 {
		t.Errorf("own write: %d rows (err %v), read %d times; want committed once", n, err, ownReads.Load())
	}
	select {
	case err := <-shared:
		t.Fatalf("the shared write did not wait for the group in flight (err %v)", err)
	default:
	}
	if _, k := gs.of(pool).State(); k != 1 {
		t.Errorf("%d writes wait for the next group, want the shared one only", k)
	}
	release()
	if err := <-shared; err != nil || sharedReads.Load() != 1 {
		t.Errorf("shared write after the group: %v, read %d times", err, sharedReads.Load())
	}
}

// A group sends its members' statements up to their session parts in the
// members' order, then the session parts in session order (members of one
// session in their order), each member's own statements in theirs.
func TestInSessionOrder(t *testing.T) {
	t.Parallel()
	member := func(session string, qs ...string) *pipeOp {
		op := &pipeOp{}
		for _, q := range qs {
			st := sqlstore.PipelineStmt{Query: q}
			if strings.HasPrefix(q, "lock") { // the session part's first
				st.Session = session
			}
			op.Val = append(op.Val, st)
		}
		return op
	}
	ops := []*pipeOp{
		member("s-b", "fence 1", "job 1", "lock b 1", "session b 1", "run 1"),
		member("", "claim 2", "move 2"),
		member("s-a", "fence 3", "lock a 3", "session a 3", "run 3"),
		member("s-b", "lock b 4", "session b 4", "run 4"),
		member("s-a", "fence 5", "lock a 5", "run 5"),
	}
	var got []string
	for _, st := range inSessionOrder(ops) {
		got = append(got, st.Query)
	}
	want := []string{"fence 1", "job 1", "claim 2", "move 2", "fence 3", "fence 5",
		"lock a 3", "session a 3", "run 3", "lock a 5", "run 5",
		"lock b 1", "session b 1", "run 1", "lock b 4", "session b 4", "run 4"}
	if !slices.Equal(got, want) {
		t.Errorf("order\n got %q\nwant %q", got, want)
	}
}
