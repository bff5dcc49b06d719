package queue_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/queue"
	"github.com/agentryhq/agentry/run"
)

// enqueue enqueues a new run in its own session (s-<id>).
// enqueueKeyed enqueues run id of u1 with the Idempotency-Key "key-"+id,
// which must make a new run of that id (its first, or one whose session
// was deleted since).
func enqueueKeyed(t *testing.T, q *queue.Queue, id string) {
	t.Helper()
	s, r, j := pending(id, "u1")
	j.IdempotencyKey = "key-" + id
	if got, dup, err := q.Enqueue(context.Background(), s, r, j); err != nil || dup || got != id {
		t.Fatalf("enqueue: run %s, dup %v, %v; want a new run %s", got, dup, err, id)
	}
}

func enqueue(t *testing.T, q *queue.Queue, id string) (*db.Session, *db.Run) {
	t.Helper()
	s, r, j := pending(id, "u1")
	if _, _, err := q.Enqueue(context.Background(), s, r, j); err != nil {
		t.Fatal(err)
	}
	return s, r
}

func jobGone(t *testing.T, q *queue.Queue, id string) bool {
	t.Helper()
	_, err := q.Get(context.Background(), id, "", false)
	if err != nil && !errors.Is(err, queue.ErrNotFound) {
		t.Fatal(err)
	}
	return err != nil
}

// A deleted session's finished jobs are deleted with it (their payload holds
// the run's input); other sessions' jobs stay.
func TestDeleteSessions_DeletesTheSessionsJobs(t *testing.T) {
	eachDriver(t, func(t *testing.T, d *db.DB) {
		q := openQueue(t, d, testCfg(), complete(d))
		enqueue(t, q, "a")
		enqueue(t, q, "b")
		for _, id := range []string{"a", "b"} {
			waitFor(t, id+" completed", func() bool { return jobOf(t, q, id).Status == queue.StatusCompleted })
		}
		if err := d.DeleteSessions(context.Background(), "s-a"); err != nil {
			t.Fatal(err)
		}
		if !jobGone(t, q, "a") || jobGone(t, q, "b") {
			t.Fatalf("after deleting s-a: job a gone %v, job b gone %v; want true, false", jobGone(t, q, "a"), jobGone(t, q, "b"))
		}
	})
}

// Deleting the session of a running job stops the job: its attempt is
// fenced (its run's final save, session included, is refused, so nothing
// of the session comes back) and its heartbeat cancels its context.
func TestDeleteSessions_RunningJobIsStoppedAndResurrectsNothing(t *testing.T) {
	eachDriver(t, func(t *testing.T, d *db.DB) {
		started, release, stop := make(chan struct{}), make(chan struct{}), make(chan struct{})
		t.Cleanup(func() { close(stop) })
		type outcome struct{ save, cause error }
		done := make(chan outcome, 1)
		h := func(ctx context.Context, j *queue.Job) (run.Status, error) {
			close(started)
			<-release
			// What an agent does at its end: the session and the run in
			// one save, through the fenced context.
			s, r, _ := pending(j.ID, j.UserID)
			r.Status = run.StatusCompleted
			_, _, err := d.SaveRun(context.WithoutCancel(ctx), s, r)
			if err != nil {
				select { // the heartbeat's cancel
				case <-ctx.Done():
				case <-stop:
				}
			}
			done <- outcome{err, context.Cause(ctx)}
			return run.StatusCompleted, err
		}
		q := openQueue(t, d, testCfg(), h)
		enqueue(t, q, "live")
		<-started
		if err := d.DeleteSessions(context.Background(), "s-live"); err != nil {
			t.Fatal(err)
		}
		close(release)
		got := <-done
		if !errors.Is(got.save, run.ErrFenced) {
			t.Errorf("the deleted session's run saved: %v", got.save)
		}
		if !errors.Is(got.cause, run.ErrFenced) {
			t.Errorf("the job's context ended with %v, want run.ErrFenced", got.cause)
		}
		if _, err := d.GetSession(context.Background(), "s-live"); !errors.Is(err, db.ErrNotFound) {
			t.Errorf("deleted session read back: %v", err)
		}
		if _, err := d.GetRun(context.Background(), "live"); !errors.Is(err, db.ErrNotFound) {
			t.Errorf("deleted run read back: %v", err)
		}
		if !jobGone(t, q, "live") {
			t.Errorf("job left: %+v", jobOf(t, q, "live"))
		}
	})
}

// A queued job of a deleted session never runs and leaves nothing behind.
func TestDeleteSessions_QueuedJobNeverRuns(t *testing.T) {
	eachDriver(t, func(t *testing.T, d *db.DB) {
		started, release := make(chan struct{}, 3), make(chan struct{})
		h := func(ctx context.Context, j *queue.Job) (run.Status, error) {
			started <- struct{}{}
			if j.ID == "queued" {
				t.Errorf("the deleted session's queued job ran")
			}
			if j.ID == "first" {
				<-release
			}
			return finishRun(ctx, d, j.ID, run.StatusCompleted)
		}
		cfg := testCfg()
		cfg.MaxConcurrency = 1
		q := openQueue(t, d, cfg, h)
		enqueue(t, q, "first")
		<-started
		enqueue(t, q, "queued")
		if err := d.DeleteSessions(context.Background(), "s-queued"); err != nil {
			t.Fatal(err)
		}
		enqueue(t, q, "last")
		close(release)
		// One worker takes jobs in order: once the last one completed, the
		// deleted one had its turn.
		waitFor(t, "last completed", func() bool { return jobOf(t, q, "last").Status == queue.StatusCompleted })
		if !jobGone(t, q, "queued") {
			t.Errorf("job left: %+v", jobOf(t, q, "queued"))
		}
		if _, err := d.GetSession(context.Background(), "s-queued"); !errors.Is(err, db.ErrNotFound) {
			t.Errorf("deleted session read back: %v", err)
		}
		if _, err := d.GetRun(context.Background(), "queued"); !errors.Is(err, db.ErrNotFound) {
			t.Errorf("deleted run read back: %v", err)
		}
	})
}

// A deleted session takes its runs' idempotency keys with it: a repeated
// request with such a key runs anew (answering with the deleted run would
// answer with nothing); keys of other sessions still deduplicate.
func TestDeleteSessions_RepeatedKeyOfADeletedRunRunsAnew(t *testing.T) {
	eachDriver(t, func(t *testing.T, d *db.DB) {
		q := openQueue(t, d, testCfg(), complete(d))
		ctx := context.Background()
		keyed := func(id, key string) (string, bool) {
			t.Helper()
			s, r, j := pending(id, "u1")
			j.IdempotencyKey = key
			got, dup, err := q.Enqueue(ctx, s, r, j)
			if err != nil {
				t.Fatal(err)
			}
			return got, dup
		}
		keyed("gone", "key-gone")
		keyed("kept", "key-kept")
		for _, id := range []string{"gone", "kept"} {
			waitFor(t, id+" completed", func() bool { return jobOf(t, q, id).Status == queue.StatusCompleted })
		}
		if err := d.DeleteSessions(ctx, "s-gone"); err != nil {
			t.Fatal(err)
		}
		// agentos derives the run id from the key: the repeat is the same id.
		if id, dup := keyed("gone", "key-gone"); dup || id != "gone" {
			t.Fatalf("repeat of a deleted run's key: run %s, dup %v; want a new run gone", id, dup)
		}
		waitFor(t, "gone completed again", func() bool { return jobOf(t, q, "gone").Status == queue.StatusCompleted })
		if id, dup := keyed("other", "key-kept"); !dup || id != "kept" {
			t.Fatalf("repeat of a live run's key: run %s, dup %v; want kept, true", id, dup)
		}
	})
}

// A paused run keeps its step journal (it resumes from it): deleting its
// session deletes it.
func TestDeleteSessions_DeletesAPausedRunsJournal(t *testing.T) {
	eachDriver(t, func(t *testing.T, d *db.DB) {
		var q *queue.Queue
		h := func(ctx context.Context, j *queue.Job) (run.Status, error) {
			_, err := q.Journal().Do(ctx, run.JournalStep{RunID: j.ID, Key: "model:0", Kind: "model", Attempt: 1, Idempotent: true},
				func(context.Context) (json.RawMessage, error) { return json.RawMessage(`{"content":"secret"}`), nil })
			if err != nil {
				return "", err
			}
			return finishRun(ctx, d, j.ID, run.StatusPaused)
		}
		q = openQueue(t, d, testCfg(), h)
		enqueue(t, q, "paused")
		waitFor(t, "paused", func() bool { return jobOf(t, q, "paused").Status == queue.StatusPaused })
		steps, err := q.Journal().Steps(context.Background(), "paused")
		if err != nil || len(steps) != 1 {
			t.Fatalf("the paused run's journal: %d steps, %v; want 1", len(steps), err)
		}
		if err := d.DeleteSessions(context.Background(), "s-paused"); err != nil {
			t.Fatal(err)
		}
		steps, err = q.Journal().Steps(context.Background(), "paused")
		if err != nil || len(steps) != 0 {
			t.Fatalf("after the delete: %d steps, %v; want none", len(steps), err)
		}
	})
}

// A run whose session is deleted while it runs may still try to record a
// step it had under way: the write is refused (it runs the job fence, and
// the job row is gone), where before it raised the journal's fence again,
// as a first write does, and stayed. Its attempt then ends cleanly: it is not retried, nothing of the run comes
// back, and its journal is cleared instead of left behind with no run, job
// or session to ever delete it.
func TestDeleteSessions_RunningJobLeavesNoJournal(t *testing.T) {
	eachDriver(t, func(t *testing.T, d *db.DB) {
		var q *queue.Queue
		var calls atomic.Int32
		started, release, ended := make(chan struct{}), make(chan struct{}), make(chan error, 1)
		h := func(ctx context.Context, j *queue.Job) (run.Status, error) {
			if calls.Add(1) > 1 {
				return "", errors.New("the deleted session's run was retried")
			}
			step := func(key string) error {
				// A step under way is not cut short by the stop.
				_, err := q.Journal().Do(context.WithoutCancel(ctx), run.JournalStep{RunID: j.ID, Key: key, Kind: "tool", Attempt: j.Attempt, Idempotent: true},
					func(context.Context) (json.RawMessage, error) { return json.RawMessage(`{"content":"secret"}`), nil })
				return err
			}
			if err := step("tool:0"); err != nil {
				return "", err
			}
			close(started)
			<-release
			if err := step("tool:1"); err != nil {
				// Refused: a step write runs the job fence too, and the
				// job row is gone (docs/adr/journal-job-fence.md).
				ended <- err
				return "", err
			}
			// The run's final save, as an agent makes it: the session and
			// the run, through the fenced context.
			s, r, _ := pending(j.ID, j.UserID)
			r.Status = run.StatusCompleted
			_, _, err := d.SaveRun(context.WithoutCancel(ctx), s, r)
			ended <- err
			return run.StatusCompleted, err
		}
		q = openQueue(t, d, testCfg(), h)
		enqueue(t, q, "orphan")
		<-started
		if err := d.DeleteSessions(context.Background(), "s-orphan"); err != nil {
			t.Fatal(err)
		}
		close(release)
		if err := <-ended; !errors.Is(err, run.ErrFenced) {
			t.Fatalf("the deleted session's run saved: %v", err)
		}
		waitFor(t, "the attempt to end", func() bool { now, _ := q.Running(); return now == 0 })
		// The worker clears after the handler returns: give it a moment.
		waitFor(t, "the journal to be cleared", func() bool {
			steps, err := q.Journal().Steps(context.Background(), "orphan")
			return err == nil && len(steps) == 0
		})
		if n := calls.Load(); n != 1 {
			t.Errorf("the handler ran %d times", n)
		}
		if _, err := d.GetRun(context.Background(), "orphan"); !errors.Is(err, db.ErrNotFound) {
			t.Errorf("deleted run read back: %v", err)
		}
		if !jobGone(t, q, "orphan") {
			t.Errorf("job left: %+v", jobOf(t, q, "orphan"))
		}
	})
}

// A run id enqueued again after its session was deleted (agentos derives
// the run id from a repeated Idempotency-Key) starts again at attempt 1.
// The deleted run's attempt, still running on the node that claims the new
// one, is fenced out by that claim: its context ends at once and its final
// save is refused, where before the next heartbeat it passed the job fence
// (same attempt, same node) and recorded the new job's outcome. Heartbeats
// are stopped: nothing but the claim can tell the old attempt.
func TestDeleteSessions_RunEnqueuedAgainFencesOutTheDeletedAttempt(t *testing.T) {
	eachDriver(t, func(t *testing.T, d *db.DB) {
		var calls atomic.Int32
		firstIn, firstGo, secondIn, secondGo := make(chan struct{}), make(chan struct{}), make(chan struct{}), make(chan struct{})
		type outcome struct{ save, cause error }
		firstDone := make(chan outcome, 1)
		h := func(ctx context.Context, j *queue.Job) (run.Status, error) {
			if calls.Add(1) > 1 {
				close(secondIn)
				<-secondGo
				return finishRun(ctx, d, j.ID, run.StatusCompleted)
			}
			close(firstIn)
			<-firstGo
			cause := context.Cause(ctx)
			s, r, _ := pending(j.ID, j.UserID)
			r.Status = run.StatusCompleted
			_, _, err := d.SaveRun(context.WithoutCancel(ctx), s, r)
			firstDone <- outcome{err, cause}
			return run.StatusCompleted, err
		}
		cfg := testCfg()
		cfg.LockGrace = time.Minute // no lease sweep while heartbeats are stopped
		q := openQueueWith(t, d, cfg, h, func(q *queue.Queue) { q.StopHeartbeats() })
		ctx := context.Background()
		enqueueKeyed(t, q, "again")
		<-firstIn
		if err := d.DeleteSessions(ctx, "s-again"); err != nil {
			t.Fatal(err)
		}
		enqueueKeyed(t, q, "again")
		<-secondIn
		close(firstGo)
		got := <-firstDone
		if !errors.Is(got.cause, run.ErrFenced) {
			t.Errorf("the deleted run's attempt went on after the new claim: its context's cause is %v, want run.ErrFenced", got.cause)
		}
		if !errors.Is(got.save, run.ErrFenced) {
			t.Errorf("the deleted run's attempt saved over the new run: %v", got.save)
		}
		if j := jobOf(t, q, "again"); j.Status != queue.StatusRunning || j.Attempt != 1 {
			t.Errorf("after the deleted attempt's save the new job is %s at attempt %d, want running at 1", j.Status, j.Attempt)
		}
		close(secondGo)
		waitFor(t, "the new run completed", func() bool { return jobOf(t, q, "again").Status == queue.StatusCompleted })
		if r, err := d.GetRun(ctx, "again"); err != nil || r.Status != run.StatusCompleted {
			t.Fatalf("the new run: %v, %v", r, err)
		}
		if n := calls.Load(); n != 2 {
			t.Errorf("the handler ran %d times, want 2", n)
		}
	})
}

// An attempt whose handler fails before its heartbeat saw the job row
// deleted (with its session) ends there: it is not retried (there is no
// row to retry) and does not leave the journal behind, which a step it
// recorded after the delete wrote again. Heartbeats are stopped so that
// the failure comes first.
func TestDeleteSessions_FailingAttemptOfADeletedJobIsNotRetried(t *testing.T) {
	eachDriver(t, func(t *testing.T, d *db.DB) {
		var q *queue.Queue
		var calls atomic.Int32
		started, release, ended := make(chan struct{}), make(chan struct{}), make(chan struct{})
		h := func(ctx context.Context, j *queue.Job) (run.Status, error) {
			calls.Add(1)
			defer close(ended)
			step := func(key string) error {
				_, err := q.Journal().Do(context.WithoutCancel(ctx), run.JournalStep{RunID: j.ID, Key: key, Kind: "tool", Attempt: j.Attempt, Idempotent: true},
					func(context.Context) (json.RawMessage, error) { return json.RawMessage(`{"content":"secret"}`), nil })
				return err
			}
			if err := step("tool:0"); err != nil {
				return "", err
			}
			close(started)
			<-release
			if err := step("tool:1"); err != nil {
				return "", err
			}
			return "", errors.New("the model is unavailable")
		}
		cfg := testCfg()
		cfg.LockGrace = time.Minute // no lease sweep while heartbeats are stopped
		q = openQueueWith(t, d, cfg, h, func(q *queue.Queue) { q.StopHeartbeats() })
		ctx := context.Background()
		enqueue(t, q, "failing")
		<-started
		if err := d.DeleteSessions(ctx, "s-failing"); err != nil {
			t.Fatal(err)
		}
		close(release)
		<-ended
		engine := waitForEngineJobs(t, q, "failing", "the River job to end", func(engine []queue.EngineJob) bool {
			return len(engine) == 1 && (engine[0].State == "completed" || engine[0].State == "cancelled" || engine[0].State == "discarded")
		})
		if engine[0].Attempt != 1 {
			t.Errorf("the deleted job was retried: its River job ended %s at attempt %d", engine[0].State, engine[0].Attempt)
		}
		if steps, err := q.Journal().Steps(ctx, "failing"); err != nil || len(steps) != 0 {
			t.Errorf("the deleted run's journal: %d steps left, %v", len(steps), err)
		}
		if n := calls.Load(); n != 1 {
			t.Errorf("the handler ran %d times", n)
		}
	})
}
