package agent

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/model/scripted"
	"github.com/agentryhq/agentry/run"
	"github.com/agentryhq/agentry/tool"
)

// closingTool closes the database when the model calls it, so the run's
// reads at start succeed and storing the run fails.
func closingTool(d *db.DB) tool.Tool {
	return funcTool("close_db", tool.FuncConfig{}, func(context.Context) (string, error) {
		return "closed", d.Close()
	})
}

// terminalEvents are the events that end an agent run.
var terminalEvents = []run.EventType{run.EventRunCompleted, run.EventRunError, run.EventRunCancelled, run.EventRunPaused}

// TestStream_RunNotStoredNeverSaysItCompleted: when storing the run fails,
// the stream ends with a StorageError RunError (naming no database) and the
// error wrapping ErrStorage, never with RunCompleted; Run returns the error.
func TestStream_RunNotStoredNeverSaysItCompleted(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tests := []struct {
		name string
		opts func(d *db.DB) []RunOption
	}{
		{"new session", func(*db.DB) []RunOption { return nil }},
		{"existing session", func(d *db.DB) []RunOption {
			if _, err := d.UpsertSession(ctx, &db.Session{SessionID: "s", SessionType: run.TypeAgent}); err != nil {
				t.Fatal(err)
			}
			return []RunOption{WithSessionID("s")}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			d := openSQLite(t)
			opts := tt.opts(d)
			a := mustAgent(t, Config{DB: d, Tools: []tool.Tool{closingTool(d)}, AddHistoryToContext: true,
				Model: script(t, scripted.Turn{ToolCalls: []scripted.ToolCall{{Name: "close_db"}}}, scripted.Turn{Content: "done"})})
			var evs []run.Event
			var streamErr error
			for ev, err := range a.Stream(ctx, run.TextInput("hi"), opts...) {
				if err != nil {
					streamErr = err
					continue
				}
				if streamErr != nil {
					t.Fatalf("event %s after the error", ev.Event)
				}
				evs = append(evs, ev)
			}
			if !errors.Is(streamErr, ErrStorage) {
				t.Fatalf("stream error %v, want ErrStorage", streamErr)
			}
			if find(evs, run.EventRunCompleted) != nil {
				t.Fatalf("events %v: RunCompleted for a run that was not stored", names(evs))
			}
			last := evs[len(evs)-1]
			if last.Event != run.EventRunError || last.ErrorType != "StorageError" || last.Content != storageErrorContent {
				t.Fatalf("last event %+v, want RunError StorageError", last)
			}
			n := 0
			for _, e := range evs {
				if slices.Contains(terminalEvents, e.Event) {
					n++
				}
			}
			if n != 1 {
				t.Fatalf("events %v: want exactly one terminal event", names(evs))
			}
		})
	}
}

func TestRun_RunNotStoredReturnsErrStorage(t *testing.T) {
	t.Parallel()
	d := openSQLite(t)
	a := mustAgent(t, Config{DB: d, Tools: []tool.Tool{closingTool(d)},
		Model: script(t, scripted.Turn{ToolCalls: []scripted.ToolCall{{Name: "close_db"}}}, scripted.Turn{Content: "done"})})
	out, err := a.Run(context.Background(), run.TextInput("hi"))
	if !errors.Is(err, ErrStorage) || out == nil {
		t.Fatalf("Run = %v, %v; want the run and an error wrapping ErrStorage", out, err)
	}
}

// TestRun_SessionUnreadableDoesNotStart: a run whose session cannot be read
// does not start: no output, no event, nothing stored, and an error wrapping
// ErrStorage (its run content used to carry the database's error text).
func TestRun_SessionUnreadableDoesNotStart(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := openSQLite(t)
	a := mustAgent(t, Config{DB: d, Model: scripted.Reply("x")})
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	out, err := a.Run(ctx, run.TextInput("x"), WithSessionID("s"))
	if out != nil || !errors.Is(err, ErrStorage) || !strings.Contains(err.Error(), "load session s") {
		t.Fatalf("Run = %+v, %v; want no output and ErrStorage", out, err)
	}
	var evs []run.Event
	var errs []error
	for ev, err := range a.Stream(ctx, run.TextInput("x"), WithSessionID("s")) {
		if err != nil {
			errs = append(errs, err)
			continue
		}
		evs = append(evs, ev)
	}
	if len(evs) != 0 || len(errs) != 1 || !errors.Is(errs[0], ErrStorage) {
		t.Fatalf("stream: events %v, errors %v; want only the ErrStorage error", names(evs), errs)
	}
}
