package agentos

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/internal/clip"
	"github.com/agentryhq/agentry/run"
	"github.com/agentryhq/agentry/runlog"
)

// An event of a run's log whose stored JSON cannot be read (cut off, not
// JSON, not an object: a bad write, a manual edit, another program) is not
// the end of a resume stream: ending there (with or without an error
// frame) would leave the client reconnecting to the same event for ever,
// never reaching the run's end. It is sent, with its id, as a CustomEvent
// (Agno's name for an event a client may not know, as the log's own
// markers for dropped or too large events) whose content names the event
// that could not be read, and a warning is logged; when it was the run's
// final event and the run's row tells that end, the end is sent from the
// row (its full content), as for a run whose log has no final event. See
// docs/adr/resume-unreadable-events.md.

// readableEvent returns rec's name and JSON as a stream frame carries
// them: one JSON object on one line (an object stored over several lines
// is compacted). ok is false when rec cannot be sent as it was stored.
func readableEvent(rec runlog.Record) (name string, data []byte, ok bool) {
	if rec.Event == "" || strings.ContainsAny(rec.Event, "\r\n") || !json.Valid(rec.Data) {
		return "", nil, false
	}
	data = rec.Data
	if data[0] != '{' || data[len(data)-1] != '}' || bytes.ContainsAny(data, "\r\n") {
		var b bytes.Buffer
		if json.Compact(&b, data) != nil || b.Len() < 2 || b.Bytes()[0] != '{' {
			return "", nil, false
		}
		data = b.Bytes()
	}
	return rec.Event, data, true
}

// unreadableEvent is what a resume stream sends in place of rec, a stored
// event of the run that readableEvent refused: the run's end built from
// its row when rec is its final event and the row, read now, tells that
// end (a pause aside: which pause an unreadable event was cannot be
// told); a CustomEvent saying so otherwise. The warning logged names the
// event, never its content.
func (s *Server) unreadableEvent(ctx context.Context, l *runlog.Log, a runTarget, row *db.Run, rec runlog.Record) (string, []byte, error) {
	name := clip.Mark(strings.NewReplacer("\r", " ", "\n", " ").Replace(rec.Event), 64, "…")
	s.log.WarnContext(ctx, "resume stream: a stored event of the run is not one JSON object; sent a CustomEvent in its place",
		"run_id", row.RunID, "seq", rec.Seq, "attempt", rec.Attempt, "event", name, "bytes", len(rec.Data))
	if rec.Final {
		now, err := a.DB().GetRun(ctx, row.RunID)
		if err != nil {
			return "", nil, err
		}
		last, ok, err := l.Last(ctx, row.RunID)
		if err != nil {
			return "", nil, err
		}
		c := a.Component()
		if finalStatus(now.Status) && now.Status != run.StatusPaused && ok && last.Seq == rec.Seq &&
			rec.Event == string(c.EventName(terminalType(now.Status))) {
			ev := terminalFromRow(a, now)
			data, err := storedEvent(ev)
			return string(ev.Event), data, err
		}
	}
	ev := runEvent(a, row.RunID, row.SessionID, run.EventCustom)
	ev.Content = map[string]any{"event_unreadable": name,
		"message": "this event of the run could not be read from the run's event log and is left out here (the run's stored output is complete)"}
	data, err := storedEvent(ev)
	return string(ev.Event), data, err
}

// runEvent is an event of a's run with the run's identity fields.
func runEvent(a runTarget, runID, sessionID string, t run.EventType) *run.Event {
	c := a.Component()
	ev := &run.Event{Event: t, CreatedAt: time.Now().Unix(), RunID: runID, SessionID: sessionID}
	switch c.Type {
	case run.TypeTeam:
		ev.TeamID, ev.TeamName = c.ID, c.Name
	case run.TypeWorkflow:
		ev.WorkflowID, ev.WorkflowName = c.ID, c.Name
	default:
		ev.AgentID, ev.AgentName = c.ID, c.Name
	}
	return ev
}
