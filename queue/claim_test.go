package queue_test

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/queue"
	"github.com/agentryhq/agentry/run"
)

// A run whose row ended before its job could record it (the process died
// in between) is not handed to the handler again: the claim read the row,
// and the job records the run's status, with a reason when it failed or
// was cancelled (the job said nothing of why it ended without running).
func TestClaim_RunAlreadyFinalIsNotExecutedAgain(t *testing.T) {
	eachDriver(t, func(t *testing.T, d *db.DB) {
		h, calls := completing(d)
		q, err := queue.Open(context.Background(), d, testCfg(), h)
		if err != nil {
			t.Fatal(err)
		}
		cases := []struct {
			id  string
			st  run.Status
			job string
		}{{"fin-c", run.StatusCompleted, queue.StatusCompleted}, {"fin-e", run.StatusError, queue.StatusFailed}, {"fin-x", run.StatusCancelled, queue.StatusCancelled}}
		for _, tc := range cases {
			s, r, j := pending(tc.id, "u1")
			if _, _, err := q.Enqueue(context.Background(), s, r, j); err != nil {
				t.Fatal(err)
			}
			if _, err := finishRun(context.Background(), d, tc.id, tc.st); err != nil {
				t.Fatal(err)
			}
		}
		if err := q.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			q.Stop(ctx)
		})
		for _, tc := range cases {
			waitFor(t, tc.id+" "+tc.job, func() bool { return jobOf(t, q, tc.id).Status == tc.job })
			if st := runStatus(t, d, tc.id); st != tc.st {
				t.Fatalf("run %s is %s, want %s", tc.id, st, tc.st)
			}
			// A failed or cancelled job says why it ended without running.
			j := jobOf(t, q, tc.id)
			if want := tc.job != queue.StatusCompleted; (j.Error != "") != want || want && !strings.Contains(j.Error, "before its job recorded it") {
				t.Errorf("job %s (%s) has error %q, want a reason saying its run ended first: %v", tc.id, j.Status, j.Error, want)
			}
		}
		if n := calls.Load(); n != 0 {
			t.Fatalf("the handler ran %d times for runs that had ended", n)
		}
	})
}

// The claim moves the run's row to RUNNING (its status and run_data's)
// before the handler runs, keeping the rest of the row as it was; on
// Postgres it does so on the server, without reading the row first.
func TestClaim_RunRowIsRunningWhileItRuns(t *testing.T) {
	eachDriver(t, func(t *testing.T, d *db.DB) {
		seen := make(chan *db.Run, 1)
		h := func(ctx context.Context, j *queue.Job) (run.Status, error) {
			row, err := d.GetRun(ctx, j.ID)
			if err != nil {
				return "", err
			}
			seen <- row
			return finishRun(ctx, d, j.ID, run.StatusCompleted)
		}
		q := openQueue(t, d, testCfg(), h)
		s, r, j := pending("running1", "u1")
		before, err := r.Output()
		if err != nil {
			t.Fatal(err)
		}
		before.Content, before.ContentType = "queued input", "str"
		if r, err = db.RunFromOutput(before); err != nil {
			t.Fatal(err)
		}
		if _, _, err := q.Enqueue(context.Background(), s, r, j); err != nil {
			t.Fatal(err)
		}
		var row *db.Run
		select {
		case row = <-seen:
		case <-time.After(60 * time.Second):
			t.Fatal("the handler did not run")
		}
		out, err := row.Output()
		if err != nil {
			t.Fatal(err)
		}
		if row.Status != run.StatusRunning || out.Status != run.StatusRunning {
			t.Fatalf("the handler saw the run %s (run_data %s), want RUNNING in both", row.Status, out.Status)
		}
		if out.Content != "queued input" || out.AgentID != "a1" || out.UserID != "u1" || out.CreatedAt != before.CreatedAt || row.RunIndex == nil {
			t.Fatalf("the claim changed the rest of the row: %+v (run_index %v)", out, row.RunIndex)
		}
		waitFor(t, "running1 completed", func() bool { return runStatus(t, d, "running1") == run.StatusCompleted })
	})
}

// A first attempt's claim raises no journal fence (nothing older is left to
// fence out: its own journal writes are fenced as they come), and its steps
// are recorded; a later attempt's claim raises the fence, so that from its
// commit on the attempt before it can record nothing, even a step it never
// tried before.
func TestClaim_LaterAttemptFencesOutTheJournalOfTheAttemptBefore(t *testing.T) {
	eachDriver(t, func(t *testing.T, d *db.DB) {
		var q *queue.Queue
		var mu sync.Mutex
		probes := map[int]error{} // attempt → the first attempt's journal write made during it
		h := func(ctx context.Context, j *queue.Job) (run.Status, error) {
			// Attempt 1 records a step of its own; a later attempt, before
			// recording anything, tries one as attempt 1.
			_, err := q.Journal().Do(context.WithoutCancel(ctx), run.JournalStep{RunID: j.ID, Key: "tool:" + strconv.Itoa(j.Attempt), Kind: "tool", Attempt: 1},
				func(context.Context) (json.RawMessage, error) { return json.RawMessage(`"done"`), nil })
			mu.Lock()
			probes[j.Attempt] = err
			mu.Unlock()
			if j.Attempt == 1 {
				return "", errors.New("the first attempt fails after its step")
			}
			return finishRun(ctx, d, j.ID, run.StatusCompleted)
		}
		q = openQueue(t, d, testCfg(), h)
		s, r, j := pending("fence2", "u1")
		if _, _, err := q.Enqueue(context.Background(), s, r, j); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the run's second attempt completed", func() bool { return jobOf(t, q, "fence2").Status == queue.StatusCompleted })
		mu.Lock()
		defer mu.Unlock()
		if err, ran := probes[1]; !ran || err != nil {
			t.Errorf("attempt 1 recording its own step: ran %v, %v (want it recorded)", ran, err)
		}
		if err, ran := probes[2]; !ran || !errors.Is(err, run.ErrFenced) {
			t.Errorf("attempt 1 recording after attempt 2's claim: ran %v, %v (want run.ErrFenced)", ran, err)
		}
	})
}

// A claim takes a running row at an older attempt only once its lease
// expired (no renewal for lock_grace: its worker is gone); while the lease
// is live the run is not taken over, however long it runs.
func TestClaim_LiveLeaseOfAnOlderAttemptIsNotTakenOver(t *testing.T) {
	eachDriver(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		q, err := queue.Open(ctx, d, testCfg(), complete(d))
		if err != nil {
			t.Fatal(err)
		}
		s, r, j := pending("live", "u1")
		if _, _, err := q.Enqueue(ctx, s, r, j); err != nil {
			t.Fatal(err)
		}
		if ok, err := q.Claim(ctx, "live", 1); err != nil || !ok {
			t.Fatalf("claim of attempt 1: %v, %v", ok, err)
		}
		if ok, err := q.Claim(ctx, "live", 2); err != nil || ok {
			t.Fatalf("claim of attempt 2 while attempt 1's lease is live: %v, %v; want not claimed", ok, err)
		}
		if j := jobOf(t, q, "live"); j.Attempt != 1 || j.Status != queue.StatusRunning {
			t.Fatalf("job is %s at attempt %d, want running at 1", j.Status, j.Attempt)
		}
		if err := q.AgeLease(ctx, "live", time.Hour); err != nil {
			t.Fatal(err)
		}
		if ok, err := q.Claim(ctx, "live", 2); err != nil || !ok {
			t.Fatalf("claim of attempt 2 once attempt 1's lease expired: %v, %v; want claimed", ok, err)
		}
	})
}

// River re-dispatches a job that runs past its timeout (its rescuer), even
// though its worker lives and renews its lease: the new attempt's claim is
// refused and its River job snoozed, and the run goes on to its end once.
func TestClaim_RedispatchedLiveRunIsSnoozedNotRunTwice(t *testing.T) {
	eachDriver(t, func(t *testing.T, d *db.DB) {
		var calls atomic.Int32
		started, release := make(chan struct{}), make(chan struct{})
		h := func(ctx context.Context, j *queue.Job) (run.Status, error) {
			if calls.Add(1) == 1 {
				close(started)
				<-release
			}
			return finishRun(ctx, d, j.ID, run.StatusCompleted)
		}
		q := openQueue(t, d, testCfg(), h)
		ctx := context.Background()
		enqueue(t, q, "overrun")
		<-started
		if err := q.Redispatch(ctx, "overrun"); err != nil {
			t.Fatal(err)
		}
		engine := waitForEngineJobs(t, q, "overrun", "the redispatched job to be snoozed (or run)", func(engine []queue.EngineJob) bool {
			return calls.Load() > 1 || len(engine) == 1 && engine[0].Snoozes > 0 && engine[0].State != "running"
		})
		if n := calls.Load(); n != 1 {
			t.Fatalf("the live run was taken over: the handler ran %d times", n)
		}
		if engine[0].Attempt != 1 {
			t.Errorf("the snoozed River job is at attempt %d, want 1 (a snooze is not an attempt)", engine[0].Attempt)
		}
		close(release)
		waitFor(t, "the run completed", func() bool { return jobOf(t, q, "overrun").Status == queue.StatusCompleted })
		if j := jobOf(t, q, "overrun"); j.Attempt != 1 {
			t.Errorf("the job completed at attempt %d, want 1", j.Attempt)
		}
		if n := calls.Load(); n != 1 {
			t.Errorf("the handler ran %d times", n)
		}
	})
}

// A River job snoozed by a claim that a live lease refused (its run was
// re-dispatched while it ran) comes back after the run completed: its
// engine job ends completed, as agno_jobs says, where before the refused
// claim cancelled it (River's job cancelled, agno_jobs completed).
func TestClaim_SnoozedJobOfACompletedRunEndsCompleted(t *testing.T) {
	eachDriver(t, func(t *testing.T, d *db.DB) {
		var calls atomic.Int32
		started, release := make(chan struct{}), make(chan struct{})
		h := func(ctx context.Context, j *queue.Job) (run.Status, error) {
			if calls.Add(1) == 1 {
				close(started)
				<-release
			}
			return finishRun(ctx, d, j.ID, run.StatusCompleted)
		}
		q := openQueue(t, d, testCfg(), h)
		ctx := context.Background()
		enqueue(t, q, "snoozed")
		<-started
		if err := q.Redispatch(ctx, "snoozed"); err != nil {
			t.Fatal(err)
		}
		waitForEngineJobs(t, q, "snoozed", "the redispatched job to be snoozed", func(engine []queue.EngineJob) bool {
			return len(engine) == 1 && engine[0].Snoozes > 0 && engine[0].State != "running"
		})
		close(release)
		waitFor(t, "the run completed", func() bool { return jobOf(t, q, "snoozed").Status == queue.StatusCompleted })
		engine := waitForEngineJobs(t, q, "snoozed", "the River job to end", func(engine []queue.EngineJob) bool {
			return len(engine) == 1 && (engine[0].State == "completed" || engine[0].State == "cancelled" || engine[0].State == "discarded")
		})
		if engine[0].State != "completed" {
			t.Errorf("the River job of the completed run ended %s (attempt %d, %d snoozes), want completed as agno_jobs says", engine[0].State, engine[0].Attempt, engine[0].Snoozes)
		}
		if j := jobOf(t, q, "snoozed"); j.Status != queue.StatusCompleted || j.Attempt != 1 {
			t.Errorf("the job is %s at attempt %d, want completed at 1", j.Status, j.Attempt)
		}
		if n := calls.Load(); n != 1 {
			t.Errorf("the handler ran %d times", n)
		}
	})
}
