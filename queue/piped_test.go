package queue_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/model/scripted"
	"github.com/agentryhq/agentry/queue"
	"github.com/agentryhq/agentry/run"
)

// roundTrips records the statements a pool sends, alone (one round trip
// each) or in pgx batches (one round trip per batch).
type roundTrips struct {
	mu      sync.Mutex
	alone   []string
	batched []string
	batches int
	// countOnly keeps no statement text (benchmarks): trips counts.
	countOnly bool
	trips     atomic.Int64
}

// roundTrips is how many statements went alone and batches so far.
func (r *roundTrips) roundTrips() int64 { return r.trips.Load() }

func (r *roundTrips) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	r.trips.Add(1)
	if r.countOnly {
		return ctx
	}
	r.mu.Lock()
	r.alone = append(r.alone, d.SQL)
	r.mu.Unlock()
	return ctx
}

func (r *roundTrips) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func (r *roundTrips) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	r.trips.Add(1)
	if r.countOnly {
		return ctx
	}
	r.mu.Lock()
	r.batches++
	r.mu.Unlock()
	return ctx
}

func (r *roundTrips) TraceBatchQuery(_ context.Context, _ *pgx.Conn, d pgx.TraceBatchQueryData) {
	if r.countOnly {
		return
	}
	r.mu.Lock()
	r.batched = append(r.batched, d.SQL)
	r.mu.Unlock()
}

func (r *roundTrips) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}

// reset forgets the statements recorded so far.
func (r *roundTrips) reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.alone, r.batched, r.batches = nil, nil, 0
}

// count is how many statements, alone and batched, match all of parts.
func (r *roundTrips) count(parts ...string) (alone, batched int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	match := func(q string) bool {
		for _, p := range parts {
			if !strings.Contains(q, p) {
				return false
			}
		}
		return true
	}
	for _, q := range r.alone {
		if match(q) {
			alone++
		}
	}
	for _, q := range r.batched {
		if match(q) {
			batched++
		}
	}
	return alone, batched
}

// On Postgres a background run's claim (journal fence, job claim, RUNNING
// row) and its final save (job outcome, journal clear, session and run
// upserts) take the piped path in the common case: their
// statements go out in pgx batches, never one round trip each through the
// fences' Go forms (which read the job row FOR UPDATE); and the claim's
// look at the journal spares the run its first reads of it.
func TestPipedPath_ClaimAndFinalSaveArePipedOnPostgres(t *testing.T) {
	tr := &roundTrips{}
	d := tracedPostgres(t, "piped", tr)
	a, err := agent.New(agent.Config{ID: "a1", Name: "Piped", Model: scripted.Reply("ok"), DB: d})
	if err != nil {
		t.Fatal(err)
	}
	var q *queue.Queue
	q = openQueue(t, d, testCfg(), durableHandler(&q, a, d, nil))
	// The start's look at the runs left behind their jobs (a read of the
	// PENDING and RUNNING runs) is not a claim's.
	tr.reset()
	const n = 20
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			s, r, j := pending(fmt.Sprintf("p%d", i), "u1")
			s.SessionData = json.RawMessage(fmt.Sprintf(`{"session_state":{"n":%d}}`, i))
			if _, _, err := q.Enqueue(context.Background(), s, r, j); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	for i := range n {
		id := fmt.Sprintf("p%d", i)
		waitFor(t, id+" completed", func() bool { return jobOf(t, q, id).Status == queue.StatusCompleted })
	}
	// The claim moves the run's row to RUNNING on the server: it reads no
	// run row first (GetRun). (Counted before this test's own reads.)
	if alone, _ := tr.count("SELECT run_id, session_id, run_type", "agno_runs"); alone != 0 {
		t.Errorf("%d reads of run rows for %d claims (want none: the claim moves the row in its batch)", alone, n)
	}
	// The claim reads the run's session row in its batch: the agent's
	// load takes it (db.WithClaimedSession) and reads none of its own.
	if alone, batched := tr.count("SELECT session_id, session_type", "agno_sessions"); alone != 0 || batched < n {
		t.Errorf("session reads: %d alone, %d in batches for %d runs (want none alone, one batched per claim)", alone, batched, n)
	}
	for i := range n {
		id := fmt.Sprintf("p%d", i)
		if st := runStatus(t, d, id); st != run.StatusCompleted {
			t.Fatalf("run %s is %s", id, st)
		}
		// The run saw its own session's row: the enqueued state is kept.
		s, err := d.GetSession(context.Background(), "s-"+id)
		if err != nil {
			t.Fatal(err)
		}
		var data struct {
			State map[string]any `json:"session_state"`
		}
		if err := json.Unmarshal(s.SessionData, &data); err != nil || data.State["n"] != float64(i) {
			t.Errorf("session s-%s after its run: %s (%v); want the enqueued session_state n=%d", id, s.SessionData, err, i)
		}
	}
	checks := []struct {
		what  string
		parts []string
	}{
		{"the job's claim", []string{"UPDATE", "agno_jobs", "SET status = $1, attempt = $2, locked_by = $3"}},
		{"the job's outcome with the final save", []string{"UPDATE", "agno_jobs", "error = NULL", "completed_at"}},
		{"the journal's clear", []string{"DELETE FROM", "agentry_run_steps"}},
	}
	for _, c := range checks {
		// Batched: one per run, or one for several runs of a pipeline
		// group (their multi-row forms).
		alone, batched := tr.count(c.parts...)
		if alone != 0 || batched == 0 {
			t.Errorf("%s: %d statements alone, %d in batches for %d runs (want none alone, some batched)", c.what, alone, batched, n)
		}
	}
	// The claim found the journal empty: the run's first reads of it
	// (Journal.Fence, the model step's lookup) ask no one.
	if alone, _ := tr.count("SELECT run_id, step_key", "agentry_run_steps"); alone != 0 {
		t.Errorf("%d reads of journal steps for %d first attempts (want none: the claim's snapshot answers them)", alone, n)
	}
	// The claim saw the run's run_index: the final save keeps it and
	// takes no session lock to assign one. The enqueues take one each (a
	// few twice: a group that failed is sent again member by member).
	if alone, batched := tr.count("pg_advisory_xact_lock"); alone+batched >= 3*n/2 {
		t.Errorf("%d session locks for %d runs (want about one per run: the enqueue's)", alone+batched, n)
	}
	// Nothing raises the journal's fence of a first attempt: its claim
	// has no older attempt to fence out (raisesFence), and the run's own
	// final save carries none, since the job fence vouches for its
	// attempt (db.WithRunFenced). A later attempt's claim raises it
	// (TestClaim_LaterAttemptFencesOutTheJournalOfTheAttemptBefore).
	if alone, batched := tr.count("agentry_run_steps", "'fence'"); alone+batched != 0 {
		t.Errorf("%d journal fence statements (%d batched) for %d first attempts (want none)", alone+batched, batched, n)
	}
	if alone, batched := tr.count("SELECT attempt, locked_by, status FROM", "FOR UPDATE"); alone != 0 {
		t.Errorf("the job fence's Go form ran %d times (%d batched): a claim or save left the piped path", alone, batched)
	}
	tr.mu.Lock()
	t.Logf("%d runs: %d statements alone, %d in %d batches", n, len(tr.alone), len(tr.batched), tr.batches)
	tr.mu.Unlock()
}
