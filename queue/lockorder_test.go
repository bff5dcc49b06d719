package queue_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/postgres"
	"github.com/agentryhq/agentry/model/scripted"
	"github.com/agentryhq/agentry/queue"
	"github.com/agentryhq/agentry/run"
)

// lockTrouble records what a pool's statements met that a lock order
// prevents: deadlocks (SQLSTATE 40P01), and the ROLLBACKs of pipelines
// (a group that failed, whose members then pipelined again alone).
type lockTrouble struct {
	mu        sync.Mutex
	deadlocks []string
	rollbacks int
}

func (l *lockTrouble) saw(err error, what string) {
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "40P01" {
		l.mu.Lock()
		l.deadlocks = append(l.deadlocks, what+": "+pe.Message)
		l.mu.Unlock()
	}
}

func (l *lockTrouble) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	if strings.TrimSpace(d.SQL) == "ROLLBACK" {
		l.mu.Lock()
		l.rollbacks++
		l.mu.Unlock()
	}
	return context.WithValue(ctx, lockTroubleSQL{}, d.SQL)
}

type lockTroubleSQL struct{}

func (l *lockTrouble) TraceQueryEnd(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryEndData) {
	q, _ := ctx.Value(lockTroubleSQL{}).(string)
	l.saw(d.Err, q)
}

func (l *lockTrouble) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	return ctx
}

func (l *lockTrouble) TraceBatchQuery(_ context.Context, _ *pgx.Conn, d pgx.TraceBatchQueryData) {
	l.saw(d.Err, d.SQL)
}

func (l *lockTrouble) TraceBatchEnd(_ context.Context, _ *pgx.Conn, d pgx.TraceBatchEndData) {
	l.saw(d.Err, "batch")
}

// tracedPostgres opens a Postgres database in a schema of its own whose
// connections report to tr.
func tracedPostgres(t testing.TB, name string, tr pgx.QueryTracer) *db.DB {
	t.Helper()
	d, _ := tracedPostgresSchema(t, name, tr)
	return d
}

// tracedPostgresSchema is tracedPostgres that also returns the schema.
func tracedPostgresSchema(t testing.TB, name string, tr pgx.QueryTracer) (*db.DB, string) {
	t.Helper()
	dsn := os.Getenv("AGENTRY_TEST_POSTGRES_DSN")
	if dsn == "" {
		dsn = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"
	}
	schema := fmt.Sprintf("agentry_test_%s_%d", name, time.Now().UnixNano())
	d, err := postgres.Open(context.Background(), postgres.Config{DSN: dsn, Schema: schema, MaxOpenConns: 8, Tracer: tr})
	if err != nil {
		t.Fatalf("postgres test server unavailable: %v", err)
	}
	t.Cleanup(func() {
		w := d.Driver().(db.SQLWriter).SQLWriter().DB
		if _, err := w.Exec(`DROP SCHEMA IF EXISTS "` + schema + `" CASCADE`); err != nil {
			t.Errorf("drop schema: %v", err)
		}
		d.Close()
	})
	return d, schema
}

// On Postgres the runs' piped writes share transactions (pipeline groups)
// that lock several job rows, and the lease renewal locks several job rows
// in one statement: both lock them in id order, so they never wait on each
// other in a cycle. Before, the group locked them in its members' arrival
// order and the renewal in its scan's: Postgres broke the deadlock after
// deadlock_timeout (a 1 s stall), and the group's writes fell back to one
// pipeline each.
func TestLockOrder_RenewalsAndGroupedSavesDoNotDeadlock(t *testing.T) {
	tr := &lockTrouble{}
	d := tracedPostgres(t, "lockorder", tr)
	cfg := testCfg()
	cfg.NodeID = "node-a"
	q, err := queue.Open(context.Background(), d, cfg, complete(d))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	const n, rounds = 24, 25
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("lo-%02d", i)
	}
	rand.Shuffle(n, func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
	running := map[string]*db.Run{}
	for _, id := range ids {
		s, r, j := pending(id, "u1")
		if _, _, err := q.Enqueue(ctx, s, r, j); err != nil {
			t.Fatal(err)
		}
		if ok, err := q.Claim(ctx, id, 1); err != nil || !ok {
			t.Fatalf("claim %s: %v, %v", id, ok, err)
		}
		row, err := d.GetRun(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		running[id] = row
	}

	stop := make(chan struct{})
	var renewals sync.WaitGroup
	for range 3 {
		renewals.Go(func() {
			order := append([]string(nil), ids...)
			for {
				select {
				case <-stop:
					return
				default:
				}
				rand.Shuffle(n, func(i, j int) { order[i], order[j] = order[j], order[i] })
				if err := q.Renew(ctx, order); err != nil {
					t.Errorf("renew: %v", err)
					return
				}
			}
		})
	}
	// Every run saved RUNNING again and again (the journal fence's and the
	// job fence's row locks, as an agent's saves take them), then its
	// final save (the job's outcome), all concurrently with the renewals.
	var saves sync.WaitGroup
	for _, id := range ids {
		saves.Go(func() {
			for range rounds {
				if _, err := d.UpsertRun(q.Fenced(ctx, id, 1), running[id]); err != nil {
					t.Errorf("save %s: %v", id, err)
					return
				}
			}
			if _, err := finishRun(q.Fenced(ctx, id, 1), d, id, run.StatusCompleted); err != nil {
				t.Errorf("final save %s: %v", id, err)
			}
		})
	}
	saves.Wait()
	close(stop)
	renewals.Wait()

	for _, id := range ids {
		if j := jobOf(t, q, id); j.Status != queue.StatusCompleted || j.Attempt != 1 {
			t.Errorf("job %s is %s at attempt %d, want completed at 1", id, j.Status, j.Attempt)
		}
		if st := runStatus(t, d, id); st != run.StatusCompleted {
			t.Errorf("run %s is %s", id, st)
		}
	}
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if len(tr.deadlocks) > 0 {
		t.Errorf("%d deadlocks (40P01), the first: %s", len(tr.deadlocks), tr.deadlocks[0])
	}
	if tr.rollbacks > 0 {
		t.Errorf("%d pipelines rolled back (a group failed and its members went alone)", tr.rollbacks)
	}
}

// Runs of a few shared sessions enqueued and finishing at once: the
// enqueue groups (a transaction of their own) and the pipeline groups of
// the runs' claims and saves write the same session rows concurrently. The
// pipeline groups send their members' session parts in session order, as
// the enqueue groups take their members, so neither waits on the other in
// a cycle. Without that order Postgres broke dozens of deadlocks here (a
// 1 s stall each, then every member alone), and 3,000 runs took ~58 s
// instead of ~3.
func TestLockOrder_EnqueuesAndSavesOfSharedSessionsDoNotDeadlock(t *testing.T) {
	tr := &lockTrouble{}
	d := tracedPostgres(t, "sessions", tr)
	a, err := agent.New(agent.Config{ID: "a1", Name: "Shared", Model: scripted.Reply("ok"), DB: d})
	if err != nil {
		t.Fatal(err)
	}
	const n, sessions = 800, 6
	done := make(chan struct{}, n)
	var q *queue.Queue
	handle := durableHandler(&q, a, d, nil)
	q = openQueue(t, d, testCfg(), func(ctx context.Context, j *queue.Job) (run.Status, error) {
		defer func() { done <- struct{}{} }()
		return handle(ctx, j)
	})
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := g; i < n; i += 8 {
				id := fmt.Sprintf("shared-run-%03d", i)
				s, r, j := pending(id, "u1")
				sid := fmt.Sprintf("shared-%d", rand.IntN(sessions))
				s.SessionID, r.SessionID, j.SessionID = sid, sid, sid
				s.AgentID, r.AgentID, j.ComponentID = "a1", "a1", "a1"
				if _, _, err := q.Enqueue(context.Background(), s, r, j); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	for range n {
		select {
		case <-done:
		case <-time.After(2 * time.Minute):
			t.Fatalf("runs did not finish; deadlocks so far: %d", len(tr.deadlocks))
		}
	}
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if len(tr.deadlocks) > 0 {
		t.Errorf("%d deadlocks (%d rollbacks), first: %.300s", len(tr.deadlocks), tr.rollbacks, tr.deadlocks[0])
	}
	wp := d.Driver().(db.SQLWriter).SQLWriter()
	var completed int
	if err := wp.DB.QueryRow(`SELECT count(*) FROM "`+wp.Schema+`".agno_runs WHERE status = $1`, run.StatusCompleted).Scan(&completed); err != nil || completed != n {
		t.Errorf("%d of %d runs completed (err %v)", completed, n, err)
	}
}

// A claim of a retried job raises the run's journal fence, then locks its
// job row; a session delete locks the job rows, then deletes the journal
// (a run's final save's order). When the two meet on one run, Postgres
// breaks the deadlock by rolling one back: here the delete (the claim's
// side waits with a longer deadlock_timeout, so the delete's check finds
// the cycle), which is retried and deletes the session once the claim's
// transaction ended.
func TestLockOrder_SessionDeleteMeetingAClaimIsRetried(t *testing.T) {
	d, schema := tracedPostgresSchema(t, "sessdel", &lockTrouble{})
	ctx := context.Background()
	q, err := queue.Open(ctx, d, testCfg(), complete(d))
	if err != nil {
		t.Fatal(err)
	}
	s, r, j := pending("dl", "u1")
	if _, _, err := q.Enqueue(ctx, s, r, j); err != nil {
		t.Fatal(err)
	}
	// Attempt 1 journaled a step (its fence row is committed).
	if err := q.Journal().Fence(ctx, "dl", 1); err != nil {
		t.Fatal(err)
	}
	w := d.Driver().(db.SQLWriter).SQLWriter().DB
	tbl := func(name string) string { return `"` + schema + `"."` + name + `"` }
	claim, err := w.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer claim.Rollback()
	if _, err := claim.ExecContext(ctx, `SET LOCAL deadlock_timeout = '60s'`); err != nil {
		t.Fatal(err)
	}
	// The claim of attempt 2: the fence first.
	if _, err := claim.ExecContext(ctx, `UPDATE `+tbl("agentry_run_steps")+` SET attempt = 2 WHERE run_id = $1 AND step_key = ''`, "dl"); err != nil {
		t.Fatal(err)
	}
	deleted := make(chan error, 1)
	go func() { deleted <- d.DeleteSessions(ctx, "s-dl") }()
	// The delete holds the job row and waits for the fence.
	deadline := time.Now().Add(30 * time.Second)
	for {
		var n int
		err := w.QueryRowContext(ctx, `SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE 'DELETE FROM %agentry_run_steps%'`).Scan(&n)
		if err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the session delete never waited for the journal's fence")
		}
		time.Sleep(10 * time.Millisecond)
	}
	// Then the job row: a cycle, which Postgres breaks on the delete's side.
	var id string
	if err := claim.QueryRowContext(ctx, `SELECT id FROM `+tbl("agno_jobs")+` WHERE id = $1 FOR UPDATE`, "dl").Scan(&id); err != nil {
		t.Fatalf("the claim's side was rolled back: %v", err)
	}
	if err := claim.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := <-deleted; err != nil {
		t.Fatalf("the session delete failed: %v", err)
	}
	if _, err := d.GetSession(ctx, "s-dl"); !errors.Is(err, db.ErrNotFound) {
		t.Errorf("session left: %v", err)
	}
	var left int
	if err := w.QueryRowContext(ctx, `SELECT count(*) FROM `+tbl("agentry_run_steps")+` WHERE run_id = $1`, "dl").Scan(&left); err != nil || left != 0 {
		t.Errorf("journal rows left: %d, %v", left, err)
	}
}

// A claim of a later attempt and the earlier attempt's final save on one
// run take the same two rows, the job row and the run's journal (the claim
// raises its fence, the final save records the job's outcome and deletes
// the journal): both take the job row first. The claim used to raise the
// journal's fence first, so when River dispatched the next attempt while
// the earlier one was saving its end (River rescues a job that ran past
// its timeout), each waited for the other until Postgres broke the cycle
// (40P01) after deadlock_timeout.
func TestLockOrder_ClaimAndFinalSaveTakeTheJobRowFirst(t *testing.T) {
	tr := &lockTrouble{}
	d, schema := tracedPostgresSchema(t, "claimfinal", tr)
	ctx := context.Background()
	q, err := queue.Open(ctx, d, testCfg(), complete(d))
	if err != nil {
		t.Fatal(err)
	}
	s, r, j := pending("cf", "u1")
	if _, _, err := q.Enqueue(ctx, s, r, j); err != nil {
		t.Fatal(err)
	}
	if ok, err := q.Claim(ctx, "cf", 1); err != nil || !ok {
		t.Fatalf("claim of attempt 1: %v, %v", ok, err)
	}
	// Attempt 1 journaled a step (its fence row is committed).
	if err := q.Journal().Fence(ctx, "cf", 1); err != nil {
		t.Fatal(err)
	}
	// Attempt 1 overran: its lease expired while it worked (a claim does
	// not take a live lease), and it saves its end as attempt 2 is claimed.
	if err := q.AgeLease(ctx, "cf", time.Hour); err != nil {
		t.Fatal(err)
	}
	w := d.Driver().(db.SQLWriter).SQLWriter().DB
	tbl := func(name string) string { return `"` + schema + `"."` + name + `"` }
	// Attempt 1's final save, as recordFinal and the journal's ClearStmt
	// write it: the job's outcome first.
	save, err := w.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer save.Rollback()
	// The claim's side finds a cycle first (deadlock_timeout 1 s).
	if _, err := save.ExecContext(ctx, `SET LOCAL deadlock_timeout = '60s'`); err != nil {
		t.Fatal(err)
	}
	res, err := save.ExecContext(ctx, `UPDATE `+tbl("agno_jobs")+` SET status = 'completed', locked_by = NULL, locked_at = NULL WHERE id = $1 AND attempt = 1 AND locked_by = $2`,
		"cf", q.NodeID())
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := res.RowsAffected(); n != 1 {
		t.Fatalf("attempt 1's outcome updated %d rows", n)
	}
	type claimed struct {
		ok  bool
		err error
	}
	done := make(chan claimed, 1)
	go func() {
		ok, err := q.Claim(ctx, "cf", 2)
		done <- claimed{ok, err}
	}()
	// The claim waits for the job row.
	deadline := time.Now().Add(30 * time.Second)
	for {
		var n int
		err := w.QueryRowContext(ctx, `SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE 'UPDATE %agno_jobs%'`).Scan(&n)
		if err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the claim never waited for the job row")
		}
		time.Sleep(10 * time.Millisecond)
	}
	// The final save then deletes the journal: the claim holds none of it.
	if _, err := save.ExecContext(ctx, `DELETE FROM `+tbl("agentry_run_steps")+` WHERE run_id = $1`, "cf"); err != nil {
		t.Fatalf("the final save's journal deletion: %v", err)
	}
	if err := save.Commit(); err != nil {
		t.Fatal(err)
	}
	got := <-done
	if got.err != nil || got.ok {
		t.Errorf("claim of attempt 2 after attempt 1 completed: %v, %v; want not claimed", got.ok, got.err)
	}
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if len(tr.deadlocks) > 0 {
		t.Errorf("%d deadlocks, first: %.300s", len(tr.deadlocks), tr.deadlocks[0])
	}
}

// A team member's run writes under the team's job fence carry the member's
// journal fence too (the team's fence does not vouch for the member's
// attempt): they take the team's job row first, then the member's journal
// fence row, the order of every other transaction that takes both (a
// session delete: the job rows, then the journals). They took the fence
// row first, so a session delete meeting a member's save waited for it in
// a cycle until Postgres broke it (40P01) after deadlock_timeout.
func TestLockOrder_TeamMembersSaveTakesTheJobRowFirst(t *testing.T) {
	tr := &lockTrouble{}
	d, schema := tracedPostgresSchema(t, "member", tr)
	ctx := context.Background()
	q, err := queue.Open(ctx, d, testCfg(), complete(d))
	if err != nil {
		t.Fatal(err)
	}
	s, r, j := pending("tm", "u1")
	if _, _, err := q.Enqueue(ctx, s, r, j); err != nil {
		t.Fatal(err)
	}
	if ok, err := q.Claim(ctx, "tm", 1); err != nil || !ok {
		t.Fatalf("claim of the team's attempt 1: %v, %v", ok, err)
	}
	// The member journaled a step before (its fence row is committed).
	if err := q.Journal().Fence(ctx, "tm-member", 1); err != nil {
		t.Fatal(err)
	}
	member, err := agent.New(agent.Config{ID: "m1", Name: "Member", Model: scripted.Reply("ok"), DB: d})
	if err != nil {
		t.Fatal(err)
	}
	w := d.Driver().(db.SQLWriter).SQLWriter().DB
	tbl := func(name string) string { return `"` + schema + `"."` + name + `"` }
	// A session delete's order: the job row first.
	del, err := w.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer del.Rollback()
	// The member's side finds a cycle first (deadlock_timeout 1 s).
	if _, err := del.ExecContext(ctx, `SET LOCAL deadlock_timeout = '60s'`); err != nil {
		t.Fatal(err)
	}
	if _, err := del.ExecContext(ctx, `SELECT id FROM `+tbl("agno_jobs")+` WHERE id = $1 FOR UPDATE`, "tm"); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		// The member runs under the team's attempt, with its own journal.
		_, err := member.Run(q.Fenced(ctx, "tm", 1), run.TextInput("hi"), agent.WithRunID("tm-member"), agent.WithSessionID("s-tm"),
			agent.WithUserID("u1"), agent.WithParentRunID("tm"), agent.WithJournal(q.Journal(), 1))
		done <- err
	}()
	// The member's save waits for the team's job row.
	deadline := time.Now().Add(30 * time.Second)
	for {
		var n int
		err := w.QueryRowContext(ctx, `SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND pid <> pg_backend_pid() AND query LIKE '%agno_jobs%'`).Scan(&n)
		if err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the member's save never waited for the team's job row")
		}
		time.Sleep(10 * time.Millisecond)
	}
	// The delete then takes the member's journal: the member's save holds
	// none of it.
	if _, err := del.ExecContext(ctx, `DELETE FROM `+tbl("agentry_run_steps")+` WHERE run_id = $1`, "tm-member"); err != nil {
		t.Fatalf("the delete's journal deletion: %v", err)
	}
	if err := del.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Errorf("the member's run: %v", err)
	}
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if len(tr.deadlocks) > 0 {
		t.Errorf("%d deadlocks, first: %.300s", len(tr.deadlocks), tr.deadlocks[0])
	}
}
