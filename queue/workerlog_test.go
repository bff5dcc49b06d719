package queue_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/queue"
	"github.com/agentryhq/agentry/run"
)

// logRecord is one captured slog record: its level, message and attributes
// (values as text).
type logRecord struct {
	level slog.Level
	msg   string
	attrs map[string]string
}

// captureLog is a slog.Handler that keeps every record, for tests that look
// at what the queue logs.
type captureLog struct {
	mu      *sync.Mutex
	records *[]logRecord
	with    []slog.Attr
}

func newCaptureLog() *captureLog {
	return &captureLog{mu: &sync.Mutex{}, records: &[]logRecord{}}
}

func (c *captureLog) Enabled(context.Context, slog.Level) bool { return true }

func (c *captureLog) Handle(_ context.Context, r slog.Record) error {
	rec := logRecord{level: r.Level, msg: r.Message, attrs: map[string]string{}}
	for _, a := range c.with {
		rec.attrs[a.Key] = a.Value.String()
	}
	r.Attrs(func(a slog.Attr) bool {
		rec.attrs[a.Key] = a.Value.String()
		return true
	})
	c.mu.Lock()
	*c.records = append(*c.records, rec)
	c.mu.Unlock()
	return nil
}

func (c *captureLog) WithAttrs(as []slog.Attr) slog.Handler {
	n := *c
	n.with = append(append([]slog.Attr(nil), c.with...), as...)
	return &n
}

func (c *captureLog) WithGroup(string) slog.Handler { return c }

// about returns the records whose run_id is id.
func (c *captureLog) about(id string) []logRecord {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []logRecord
	for _, r := range *c.records {
		if r.attrs["run_id"] == id {
			out = append(out, r)
		}
	}
	return out
}

// waitRecord waits for a record about run id whose message holds msg, and
// returns every record about id.
func (c *captureLog) waitRecord(t *testing.T, id, msg string) (logRecord, []logRecord) {
	t.Helper()
	var found logRecord
	waitForDescribed(t, fmt.Sprintf("a log %q about %s", msg, id), func() bool {
		for _, r := range c.about(id) {
			if strings.Contains(r.msg, msg) {
				found = r
				return true
			}
		}
		return false
	}, func() string { return fmt.Sprintf("%+v", c.about(id)) })
	return found, c.about(id)
}

// secretPayload is a job payload that no log may carry.
const secretPayload = "the user's private message"

// checkRecord fails unless rec is at level with the run's id and attempt,
// and no record about the run carries the payload or says what wantNot says.
func checkRecord(t *testing.T, rec logRecord, all []logRecord, level slog.Level, id string, attempt int, wantNot ...string) {
	t.Helper()
	if rec.level != level || rec.attrs["attempt"] != fmt.Sprint(attempt) {
		t.Errorf("%q logged at %s with attempt %q, want %s and %d", rec.msg, rec.level, rec.attrs["attempt"], level, attempt)
	}
	for _, r := range all {
		for _, no := range wantNot {
			if strings.Contains(r.msg, no) {
				t.Errorf("run %s logged %q (%s)", id, r.msg, r.level)
			}
		}
		for k, v := range r.attrs {
			if strings.Contains(v, secretPayload) {
				t.Errorf("log %q carries the payload in %s", r.msg, k)
			}
		}
	}
}

// withPayload is a job of a new run in its own session carrying
// secretPayload.
func withPayload(id string) (*db.Session, *db.Run, *queue.Job) {
	s, r, j := pending(id, "u1")
	j.Payload, _ = json.Marshal(map[string]string{"message": secretPayload})
	return s, r, j
}

// A running job whose row is deleted (its session was) is logged as
// deleted, at Info: not as a superseded attempt, which is a warning.
func TestWorkerLog_DeletedJobIsNotASupersededAttempt(t *testing.T) {
	eachDriver(t, func(t *testing.T, d *db.DB) {
		logs := newCaptureLog()
		cfg := testCfg()
		cfg.Logger = slog.New(logs)
		started, release := make(chan struct{}), make(chan struct{})
		q := openQueue(t, d, cfg, func(ctx context.Context, j *queue.Job) (run.Status, error) {
			close(started)
			<-release
			s, r, _ := pending(j.ID, j.UserID)
			r.Status = run.StatusCompleted
			_, _, err := d.SaveRun(context.WithoutCancel(ctx), s, r)
			return run.StatusCompleted, err
		})
		s, r, j := withPayload("del")
		if _, _, err := q.Enqueue(context.Background(), s, r, j); err != nil {
			t.Fatal(err)
		}
		<-started
		if err := d.DeleteSessions(context.Background(), "s-del"); err != nil {
			t.Fatal(err)
		}
		close(release)
		rec, all := logs.waitRecord(t, "del", "job deleted")
		checkRecord(t, rec, all, slog.LevelInfo, "del", 1, "superseded", "cancelled")
	})
}

// An attempt taken over by another node is logged as superseded, at Warn,
// with the reason; a cancelled run is logged as cancelled, at Info.
func TestWorkerLog_SupersededAndCancelledAttempts(t *testing.T) {
	eachDriver(t, func(t *testing.T, d *db.DB) {
		logs := newCaptureLog()
		cfg := testCfg()
		cfg.LockGrace = time.Second
		cfg.NodeID = "node-a"
		cfg.Logger = slog.New(logs)
		started, wrote := make(chan int, 4), make(chan error, 4)
		a := openQueue(t, d, cfg, blockUntilCancelled(d, started, wrote))

		// Superseded: node A hangs, node B takes the run over, A wakes.
		s, r, j := withPayload("sup")
		if _, _, err := a.Enqueue(context.Background(), s, r, j); err != nil {
			t.Fatal(err)
		}
		first := <-started
		a.Hang()
		cfgB := testCfg()
		cfgB.LockGrace = time.Second
		takeOverOnNodeB(t, d, cfgB, a, "sup")
		a.Wake()
		wantFenced(t, wrote, "node A's stale attempt's write")
		// Node A's River client may have fetched the requeued job again
		// before B did, and lost that attempt too: the first is the one
		// that ran.
		rec, all := logs.waitRecord(t, "sup", "superseded attempt stopped")
		checkRecord(t, rec, all, slog.LevelWarn, "sup", first, "job deleted", "cancelled")
		if !strings.Contains(rec.attrs["err"], "attempt") {
			t.Errorf("the superseded attempt's log says no reason: %+v", rec.attrs)
		}
	})
	eachDriver(t, func(t *testing.T, d *db.DB) {
		logs := newCaptureLog()
		cfg := testCfg()
		cfg.Logger = slog.New(logs)
		started, wrote := make(chan int, 4), make(chan error, 4)
		q := openQueue(t, d, cfg, blockUntilCancelled(d, started, wrote))
		s, r, j := withPayload("can")
		if _, _, err := q.Enqueue(context.Background(), s, r, j); err != nil {
			t.Fatal(err)
		}
		<-started
		if res, err := q.Cancel(context.Background(), "can"); err != nil || res.Status != queue.StatusRunning {
			t.Fatal(res, err)
		}
		if err := <-wrote; err != nil {
			t.Fatal(err)
		}
		rec, all := logs.waitRecord(t, "can", "run cancelled")
		checkRecord(t, rec, all, slog.LevelInfo, "can", 1, "job deleted", "superseded")
	})
}
