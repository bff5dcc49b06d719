package runlog_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/dbtest/testdbs"
	"github.com/agentryhq/agentry/runlog"
)

// lockedBuffer is a log sink safe for concurrent writes.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (w *lockedBuffer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w *lockedBuffer) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// While the database write stalls, a recorder holds a bounded number of
// events and drops the rest without making the run wait; the run's
// terminal event is still stored, a gap marker stands where the dropped
// events were, and one warning gives the number dropped.
func TestRecorder_StalledWriteBoundsTheBuffer(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	l, err := runlog.Open(ctx, testdbs.SQLite(t))
	if err != nil {
		t.Fatal(err)
	}
	entered, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	stall := func(context.Context, *sql.Tx) error {
		once.Do(func() {
			close(entered)
			<-release
		})
		return nil
	}
	var logs lockedBuffer
	logger := slog.New(slog.NewJSONHandler(&logs, nil))
	const runID = "run-stalled"
	rec := l.Record(db.WithWriteFence(ctx, stall), runID, 1, logger)
	rec.Add(content(runID, 0))
	<-entered // the flusher's first write now waits in the database
	const extra = 500
	for i := 1; i <= runlog.MaxPending+extra; i++ {
		rec.Add(content(runID, i))
	}
	close(release)
	rec.Add(completed(runID))
	if err := rec.Close(); err != nil {
		t.Fatal(err)
	}
	got, err := l.Read(ctx, runID, -1, 2*runlog.MaxPending+extra)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1+runlog.MaxPending+2 {
		t.Fatalf("stored %d events, want the first, %d buffered, the gap marker and the terminal one", len(got), runlog.MaxPending)
	}
	checkSeq(t, got, 0)
	checkGap(t, got[len(got)-2], runID, extra)
	for i, r := range got[:len(got)-2] {
		var ev struct{ Content string }
		if err := json.Unmarshal(r.Data, &ev); err != nil || ev.Content != "c"+itoa(i) || r.Final {
			t.Fatalf("event %d: %s (%v)", i, r.Data, err)
		}
	}
	if last := got[len(got)-1]; !last.Final {
		t.Fatalf("the terminal event was not stored: %+v", last)
	}
	out := logs.String()
	if strings.Count(out, `"dropped"`) != 1 || !strings.Contains(out, `"dropped":`+itoa(extra)) || !strings.Contains(out, runID) {
		t.Fatalf("warning about dropped events: %s", out)
	}
}

// checkGap checks that r is the gap marker of n events of runID.
func checkGap(t *testing.T, r runlog.Record, runID string, n int) {
	t.Helper()
	var ev struct {
		Event   string `json:"event"`
		RunID   string `json:"run_id"`
		Content struct {
			EventsDropped int `json:"events_dropped"`
		} `json:"content"`
	}
	if err := json.Unmarshal(r.Data, &ev); err != nil || r.Final || r.Event != "CustomEvent" || ev.Event != "CustomEvent" || ev.RunID != runID || ev.Content.EventsDropped != n {
		t.Fatalf("want the gap marker of %d events at %d, got %s %s (%v)", n, r.Seq, r.Event, r.Data, err)
	}
}

// A recorder whose buffer filled while writes stalled takes events again
// once a write succeeds: the events added after that are stored, after a
// gap marker that tells readers how many were dropped, instead of every
// later event but the terminal one being dropped for the rest of the
// attempt.
func TestRecorder_FullBufferRecordsAgainAfterAGapMarker(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	l, err := runlog.Open(ctx, testdbs.SQLite(t))
	if err != nil {
		t.Fatal(err)
	}
	entered, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	stall := func(context.Context, *sql.Tx) error {
		once.Do(func() {
			close(entered)
			<-release
		})
		return nil
	}
	const runID = "run-refilled"
	rec := l.Record(db.WithWriteFence(ctx, stall), runID, 1, slog.New(slog.DiscardHandler))
	rec.Add(content(runID, 0))
	<-entered
	const extra = 7
	i := 1
	for ; i <= runlog.MaxPending+extra; i++ {
		rec.Add(content(runID, i))
	}
	close(release)
	// The stalled write and the buffered events are stored: the database
	// keeps up again.
	waitFor(t, "the buffered events stored", func() bool { c, _ := l.Count(ctx, runID); return c == 1+runlog.MaxPending })
	const after = 5
	for k := range after {
		rec.Add(content(runID, 10000+k))
	}
	rec.Add(completed(runID))
	if err := rec.Close(); err != nil {
		t.Fatal(err)
	}
	got, err := l.Read(ctx, runID, -1, 2*runlog.MaxPending)
	if err != nil {
		t.Fatal(err)
	}
	checkSeq(t, got, 0)
	if want := 1 + runlog.MaxPending + 1 + after + 1; len(got) != want {
		t.Fatalf("stored %d events, want %d: the first, the buffered ones, the gap marker, %d added after the recovery and the terminal one", len(got), want, after)
	}
	checkGap(t, got[1+runlog.MaxPending], runID, extra)
	for k, r := range got[2+runlog.MaxPending : len(got)-1] {
		var ev struct{ Content string }
		if err := json.Unmarshal(r.Data, &ev); err != nil || ev.Content != "c"+itoa(10000+k) {
			t.Fatalf("event %d after the gap: %s (%v)", k, r.Data, err)
		}
	}
	if !got[len(got)-1].Final {
		t.Fatalf("the terminal event was not stored: %+v", got[len(got)-1])
	}
}

func itoa(i int) string {
	b, _ := json.Marshal(i)
	return string(b)
}

// Close twice returns the first result without panicking; Add after Close
// stores nothing, not even a terminal event, and warns.
func TestRecorder_CloseTwiceAndAddAfterClose(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	l, err := runlog.Open(ctx, testdbs.SQLite(t))
	if err != nil {
		t.Fatal(err)
	}
	var logs lockedBuffer
	const runID = "run-closed"
	rec := l.Record(ctx, runID, 1, slog.New(slog.NewJSONHandler(&logs, nil)))
	rec.Add(content(runID, 0))
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() {
			if err := rec.Close(); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if err := rec.Close(); err != nil {
		t.Fatal(err)
	}
	rec.Add(content(runID, 1))
	rec.Add(completed(runID))
	if n, err := l.Count(ctx, runID); err != nil || n != 1 {
		t.Fatalf("stored %d events (%v), want the one added before Close", n, err)
	}
	if !strings.Contains(logs.String(), "after the recorder was closed") {
		t.Fatalf("no warning: %s", logs.String())
	}
}
