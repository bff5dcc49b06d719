package runlog_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/db/dbtest/testdbs"

	"github.com/agentryhq/agentry/run"
	"github.com/agentryhq/agentry/runlog"
)

// A large event (a tool's 20 MiB result) added while smaller events wait
// for the next flush is not a stalled write: it is stored, and so are the
// attempt's later events. Where it is larger than the database takes in one
// statement (MariaDB's max_allowed_packet, 16 MiB by default) a marker
// stands in for it, rather than a write that can never succeed holding up
// the attempt's later events and its terminal event.
func TestRecorder_LargeEventBehindPendingOnesKeepsTheRest(t *testing.T) {
	eachSQL(t, func(t *testing.T, a, b *runlog.Log) {
		const runID = "run-too-large"
		big := strings.Repeat("x", 20<<20)
		rec := a.Record(context.Background(), runID, 1, nil)
		rec.Add(run.Event{Event: run.EventRunStarted, RunID: runID})
		rec.Add(run.Event{Event: run.EventToolCallCompleted, RunID: runID, Content: big})
		for i := range 3 {
			rec.Add(content(runID, i))
		}
		rec.Add(completed(runID))
		err := rec.Close()
		got := collect(t, b, runID, -1, -1, oneAttempt(b, runID))
		checkSeq(t, got, 0)
		if len(got) != 6 || !got[5].Final || got[2].Event != string(run.EventRunContent) {
			t.Fatalf("the log holds %v (Close: %v), want RunStarted, the large event or its marker, 3 contents, RunCompleted", events(got), err)
		}
		if strings.HasSuffix(t.Name(), "/mysql") {
			if got[1].Event != string(run.EventCustom) || !strings.Contains(string(got[1].Data), `"event_too_large":"ToolCallCompleted"`) {
				t.Fatalf("in place of the event too large for MariaDB: %s %.200s", got[1].Event, got[1].Data)
			}
		} else if got[1].Event != string(run.EventToolCallCompleted) || len(got[1].Data) < 20<<20 {
			t.Fatalf("the large event: %s of %d bytes", got[1].Event, len(got[1].Data))
		}
	})
}

// A terminal event too large for the database keeps its name in its
// marker (the stream still ends with it); a direct Append of an event too large fails with
// ErrEventTooLarge instead of a dropped connection.
func TestRecorder_TerminalEventTooLargeKeepsItsName(t *testing.T) {
	d := testdbs.MySQL(t)
	l, err := runlog.Open(context.Background(), d)
	if err != nil {
		t.Fatal(err)
	}
	const runID = "run-huge-end"
	rec := l.Record(context.Background(), runID, 1, nil)
	rec.Add(run.Event{Event: run.EventRunStarted, RunID: runID, AgentID: "a1"})
	rec.Add(run.Event{Event: run.EventRunCompleted, RunID: runID, Content: strings.Repeat("y", 20<<20)})
	if err := rec.Close(); err != nil {
		t.Fatal(err)
	}
	got := collect(t, l, runID, -1, -1, oneAttempt(l, runID))
	if len(got) != 2 || !got[1].Final || got[1].Event != string(run.EventRunCompleted) || !strings.Contains(string(got[1].Data), `"event_too_large":"RunCompleted"`) {
		t.Fatalf("the log holds %v", events(got))
	}
	err = l.Append(context.Background(), runID, 1, []runlog.Pending{{Event: "RunContent", Data: []byte(`"` + strings.Repeat("z", 20<<20) + `"`)}}, nil)
	if !errors.Is(err, runlog.ErrEventTooLarge) {
		t.Fatalf("append of a 20 MiB event on MariaDB: %v, want ErrEventTooLarge", err)
	}
}
