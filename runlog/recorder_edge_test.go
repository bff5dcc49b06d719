package runlog_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/db/dbtest/testdbs"
	"github.com/agentryhq/agentry/run"
	"github.com/agentryhq/agentry/runlog"
)

// TestRecorder_EventAtTheLimitWithItsNameBeyondIsAMarker: an event whose
// JSON fits the database's bound (MariaDB's max_allowed_packet less the
// log's overhead) but not with its name, which the same statement
// carries, is stored as a marker, and the attempt's later events and its
// terminal event are stored after it. Before, the recorder measured the
// JSON alone and took the event, the write measured both and refused it
// (ErrEventTooLarge) at every flush: the event was kept for ever in front
// of the later ones, none of which was stored, nor the terminal event.
func TestRecorder_EventAtTheLimitWithItsNameBeyondIsAMarker(t *testing.T) {
	t.Parallel()
	l, err := runlog.Open(context.Background(), testdbs.MySQL(t))
	if err != nil {
		t.Fatal(err)
	}
	limit := l.MaxData()
	if limit <= 0 {
		t.Fatal("no bound on MariaDB")
	}
	const runID = "run-at-the-limit"
	ev := run.Event{Event: run.EventToolCallCompleted, RunID: runID, Content: "x"}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(&ev); err != nil {
		t.Fatal(err)
	}
	// The JSON is exactly the limit long: the name's bytes take it past.
	ev.Content = strings.Repeat("x", limit-(b.Len()-1)+1)
	rec := l.Record(context.Background(), runID, 1, nil)
	rec.Add(run.Event{Event: run.EventRunStarted, RunID: runID})
	rec.Add(ev)
	for i := range 3 {
		rec.Add(content(runID, i))
	}
	rec.Add(completed(runID))
	if err := rec.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	got := collect(t, l, runID, -1, -1, oneAttempt(l, runID))
	checkSeq(t, got, 0)
	if len(got) != 6 || !got[5].Final || got[1].Event != string(run.EventCustom) ||
		!strings.Contains(string(got[1].Data), `"event_too_large":"ToolCallCompleted"`) {
		t.Fatalf("the log holds %v, want RunStarted, the too-large marker, 3 contents, RunCompleted", events(got))
	}
}
