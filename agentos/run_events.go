package agentos

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/internal/clip"
	"github.com/agentryhq/agentry/queue"
	"github.com/agentryhq/agentry/run"
	"github.com/agentryhq/agentry/runlog"
)

// eventLogs opens each database's run event log on first use (creating its
// table), so that servers that never run in the background add no table.
type eventLogs struct {
	mu   sync.Mutex
	logs map[*db.DB]*runlog.Log
	// retention: a finished run's events are deleted this long after its
	// last one (the queue's retention_seconds; default 24 h), and a run's
	// events that stopped without a final one 7 times later.
	retention time.Duration
	log       *slog.Logger
	stop      chan struct{}
	loops     sync.WaitGroup
}

// retentionEvery is how often each log deletes expired events.
const retentionEvery = time.Minute

// expire deletes l's expired events every retentionEvery until close.
func (e *eventLogs) expire(l *runlog.Log, stop <-chan struct{}) {
	defer e.loops.Done()
	t := time.NewTicker(retentionEvery)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		now := time.Now()
		cut := now.Add(-e.retention).Unix()
		stale := now.Add(-7 * e.retention).Unix()
		if _, err := l.DeleteBefore(context.Background(), cut, stale); err != nil {
			e.log.Warn("run event log: delete expired events", "err", err)
		}
	}
}

// close stops the retention loops.
func (e *eventLogs) close() {
	e.mu.Lock()
	if e.stop != nil {
		close(e.stop)
		e.stop = nil
	}
	e.mu.Unlock()
	e.loops.Wait()
}

// of returns d's event log; nil (no error) when its driver keeps none.
func (e *eventLogs) of(ctx context.Context, d *db.DB) (*runlog.Log, error) {
	if d == nil {
		return nil, nil
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if l, ok := e.logs[d]; ok {
		return l, nil
	}
	l, err := runlog.Open(context.WithoutCancel(ctx), d)
	switch {
	case errors.Is(err, runlog.ErrUnsupported):
		l = nil
	case err != nil:
		return nil, err
	}
	if e.logs == nil {
		e.logs = map[*db.DB]*runlog.Log{}
	}
	e.logs[d] = l
	if l != nil && e.stop != nil {
		e.loops.Add(1)
		go e.expire(l, e.stop)
	}
	return l, nil
}

// recordEvents starts recording a background run's events (attempt: the
// job's attempt; 1 for in-process runs) in its database's event log, for
// streaming and resuming. stop writes what is left. Without a log (memory
// driver) or when it cannot be opened, the run goes on unrecorded.
func (s *Server) recordEvents(ctx context.Context, t runTarget, runID string, attempt int) (add func(run.Event), stop func()) {
	l, err := s.events.of(ctx, t.DB())
	if err != nil {
		s.log.WarnContext(ctx, "run event log unavailable; the run's events are not kept for streaming", "run_id", runID, "err", err)
	}
	if l == nil {
		return nil, func() {}
	}
	rec := l.Record(ctx, runID, attempt, s.log)
	return rec.Add, func() { _ = rec.Close() }
}

// parseEventIndex reads a Last-Event-ID header or a last_event_index field
// (runlog.ParseIndex); a bad one is 400 naming the field.
func parseEventIndex(name, v string) (int64, error) {
	n, err := runlog.ParseIndex(v)
	if err != nil {
		return 0, &httpError{Status: http.StatusBadRequest, Err: err,
			Detail: fmt.Sprintf("%s must be the index of the last event received: an integer from -1 to %d (got %q)", name, int64(runlog.MaxIndex), clip.Mark(v, 40, "…"))}
	}
	return n, nil
}

// resumeFrom is where a resumed stream starts: the last_event_index field
// (Agno's form, or the URL's query) or the Last-Event-ID header
// (EventSource's). A form field and the header must agree when both are
// sent; a query field (inQuery) is where an EventSource's stream starts,
// and the header it sends at each reconnection to the same URL, the event
// it received last, supersedes it.
func resumeFrom(r *http.Request, field string, inQuery bool) (int64, error) {
	var hdr int64 = -1
	hv := r.Header.Values("Last-Event-ID")
	if len(hv) > 1 {
		return 0, errorf(http.StatusBadRequest, "send one Last-Event-ID header")
	}
	if len(hv) == 1 {
		n, err := parseEventIndex("Last-Event-ID", hv[0])
		if err != nil {
			return 0, err
		}
		hdr = n
	}
	if field == "" {
		return hdr, nil
	}
	n, err := parseEventIndex("last_event_index", field)
	if err != nil {
		return 0, err
	}
	if len(hv) == 1 && inQuery {
		return hdr, nil
	}
	if len(hv) == 1 && n != hdr {
		return 0, errorf(http.StatusBadRequest, "last_event_index %d and Last-Event-ID %d disagree; send one", n, hdr)
	}
	return n, nil
}

// finalStatus reports whether a run's stored status is one it ends in.
func finalStatus(st run.Status) bool {
	switch st {
	case run.StatusCompleted, run.StatusError, run.StatusCancelled, run.StatusPaused, run.StatusRegenerated:
		return true
	}
	return false
}

// streamStored streams a run's stored events after `after`, live while it
// runs, to its end: Agno's resume stream. A "replay" (run over) or
// "subscribed" (run going on) frame comes first, as Agno sends them; each
// event frame carries its index as the SSE id and as event_index. A run
// whose log is gone (retention) replays the events stored on its row; a
// run that ended without a final event in its log (its process died, or
// a paused run was continued in the foreground) gets a terminal event
// built from its row, stored in the log first (attempt 0) so that its id
// is a seq of its own, never one a later event of the run takes.
//
// A run is over when its row is final and its producer is gone (its job
// final, or not executing here): a row stored ERROR by an attempt the
// queue retries is not the end. A client that already holds the end of a
// run that is over (the log's final event, when the row agrees, or the id
// an older server gave a terminal it built from the row without storing
// it: the number of stored events) gets nothing more: 204 No Content on
// GET, which makes an EventSource stop reconnecting, and Agno's replay
// frame alone on POST. An index past that was never sent: 400.
func (s *Server) streamStored(w http.ResponseWriter, r *http.Request, a runTarget, row *db.Run, after int64) error {
	ctx := r.Context()
	d := a.DB()
	l, err := s.events.of(ctx, d)
	if err != nil {
		return err
	}
	runID := row.RunID
	// over: nothing will add events. A final row alone is not enough: an
	// attempt the queue retries stored ERROR, and the next attempt's
	// events follow in the log.
	// status is the row's status as last read with its job (runEnd); row
	// itself is read again only when it is answered or a terminal is built
	// from it.
	over, status := finalStatus(row.Status), row.Status
	var end runlog.End
	if l != nil {
		if end, status, err = s.runEnd(ctx, l, runID); err != nil {
			return err
		}
		if status != row.Status {
			// The run moved on since the handler read it.
			if row, err = d.GetRun(ctx, runID); err != nil {
				return err
			}
			status = row.Status
		}
		over = end.Over
	}
	// The log is read after the run's end: read before it, it could miss
	// the events of a run that ended in between (an in-process background
	// run writes them all a moment before its end), and a run found over
	// with no event stored would be replayed from its row, which keeps
	// none unless store_events is set: the client got no event of the run.
	var (
		stored int64
		last   runlog.Record
	)
	if l != nil {
		var ok bool
		if last, ok, err = l.Last(ctx, runID); err != nil {
			return err
		}
		if ok {
			stored = last.Seq + 1
		}
	}
	if finalStatus(row.Status) && stored == 0 && (l == nil || over) {
		return s.replayRow(w, r, row, after)
	}
	if l == nil {
		return errorf(http.StatusConflict, "run %s is %s and its events are not kept (the database keeps no event log); poll the run instead", runID, row.Status)
	}
	if after > stored {
		return errorf(http.StatusBadRequest, "event index %d was never sent: run %s has %d events (indexes 0 to %d); send the id of the last event received, or -1 for all", after, runID, stored, stored-1)
	}
	// endOf: rec is the end of the run the row tells (a RunPaused of a run
	// since continued is not, nor one of a pause the run left since: it
	// was continued outside the log and paused again). row must be the
	// run's row as last read.
	endOf := func(rec runlog.Record) bool {
		return rec.Final && rec.Event == string(a.Component().EventName(terminalType(status))) &&
			(status != run.StatusPaused || samePause(rec, row))
	}
	if over && (after == stored || (after == last.Seq && end.EndsAt(last) && endOf(last))) {
		return s.nothingMore(w, r, row, stored, after)
	}
	sse := newSSEWriter(w)
	meta := map[string]any{"run_id": runID, "current_event_count": stored}
	name := "subscribed"
	if over {
		// Agno's replay frame names the events it replays: those after
		// the client's index.
		name = "replay"
		missed := stored - after - 1 // after is -1 (all) or an index below stored
		meta["status"], meta["total_buffered"], meta["last_event_index_requested"] = row.Status, stored, after
		meta["total_events"] = missed
		meta["message"] = fmt.Sprintf("Run %s. Replaying %d missed events (of %d total).", row.Status, missed, stored)
	} else {
		meta["status"] = "running"
		meta["message"] = "Subscribed to " + string(a.Component().Type) + " run. Receiving live events."
	}
	meta["event"] = name
	if err := sse.WriteMeta(name, meta); err != nil {
		return nil
	}
	ended := func(ctx context.Context) (runlog.End, error) {
		e, st, err := s.runEnd(ctx, l, runID)
		if err != nil {
			return runlog.End{}, err
		}
		end, status = e, st
		return e, nil
	}
	failed := func(err error) error {
		s.log.WarnContext(ctx, "resume stream: read events", "run_id", runID, "err", err)
		_ = sse.WriteMeta("error", map[string]any{"event": "error", "error": "reading the run's events failed; reconnect to resume"})
		return nil
	}
	pausedEvent := string(a.Component().EventName(run.EventRunPaused))
	// held: the last event the client holds; sent: this stream sent it.
	held, sent := runlog.Record{Seq: -1}, false
	if after >= 0 && after == last.Seq {
		held = last
	}
	for {
		// next: the seq after the log's last event, where a terminal built
		// from the row is stored.
		next := stored
		for rec, err := range l.Tail(ctx, runID, after, ended, s.tailCfg) {
			if err != nil {
				return failed(err)
			}
			if rec.Seq == runlog.Idle {
				if sse.Comment("keep-alive") != nil {
					return nil
				}
				continue
			}
			name, data, ok := readableEvent(rec)
			if !ok {
				if name, data, err = s.unreadableEvent(ctx, l, a, row, rec); err != nil {
					return failed(err)
				}
			}
			held, sent = rec, true
			next = max(next, rec.Seq+1)
			after = rec.Seq
			if err := sse.WriteStored(rec.Seq, name, data); err != nil {
				return nil
			}
		}
		// The stream ends with the last attempt's final event it sent, or
		// the client held the run's end already (its producer was live
		// when the stream began). A RunPaused is such an end only while
		// the run stays paused: continued outside the log, the run's end
		// is built from the row after it.
		// A pause the client holds is compared with the row as it is now:
		// the run may have been continued and paused again while the
		// status stayed PAUSED for every read.
		heldPause := end.EndsAt(held) && held.Event == pausedEvent
		if (end.EndsAt(held) && sent && !heldPause) || ctx.Err() != nil || !finalStatus(status) {
			return nil
		}
		if status != row.Status || heldPause {
			if row, err = d.GetRun(ctx, runID); err != nil {
				return failed(err)
			}
			if status = row.Status; !finalStatus(status) {
				continue // requeued since: follow its next attempt
			}
		}
		if end.EndsAt(held) && endOf(held) {
			return nil
		}
		// The producer died (or was fenced) before its final event, or the
		// run was continued outside the log: end the stream with what the
		// row says. The event is stored at the log's next seq first, so
		// that its id names it and no later event of the run (a
		// continuation, another attempt): a client reconnecting with it
		// is told there is nothing more, or gets what came after.
		ev := terminalFromRow(a, row)
		data, err := storedEvent(ev)
		if err != nil {
			return failed(err)
		}
		err = l.AppendAt(ctx, runID, 0, next, []runlog.Pending{{Event: string(ev.Event), Data: data, Final: true}})
		switch {
		case errors.Is(err, runlog.ErrSeqMoved):
			// Events came after all (a late batch, another server's
			// terminal): follow them.
			stored = next
			continue
		case err != nil:
			return failed(err)
		}
		_ = sse.WriteStored(next, string(ev.Event), data)
		return nil
	}
}

// storedEvent is ev's JSON as the event log stores it.
func storedEvent(ev *run.Event) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	var v any = ev
	if len(ev.Extra) > 0 {
		v = ev.Stored() // a stored event read back: its unknown members too
	}
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// nothingMore answers a client that holds a finished run's last event:
// 204 on GET (an EventSource stops reconnecting; a 200 that ends would
// make it reconnect for ever), Agno's replay frame with no events after it
// on POST.
func (s *Server) nothingMore(w http.ResponseWriter, r *http.Request, row *db.Run, stored, after int64) error {
	if r.Method == http.MethodGet {
		w.WriteHeader(http.StatusNoContent)
		return nil
	}
	_ = newSSEWriter(w).WriteMeta("replay", map[string]any{"event": "replay", "run_id": row.RunID, "status": row.Status,
		"current_event_count": stored, "total_buffered": stored, "last_event_index_requested": after, "total_events": 0,
		"message": fmt.Sprintf("Run %s. Replaying 0 missed events (of %d total).", row.Status, stored)})
	return nil
}

// terminalType is the terminal event of a run that ended in st.
func terminalType(st run.Status) run.EventType {
	switch st {
	case run.StatusError:
		return run.EventRunError
	case run.StatusCancelled:
		return run.EventRunCancelled
	case run.StatusPaused:
		return run.EventRunPaused
	}
	return run.EventRunCompleted
}

// terminalFromRow is the terminal event of a finished run, from its row.
func terminalFromRow(a runTarget, row *db.Run) *run.Event {
	t := terminalType(row.Status)
	c := a.Component()
	ev := runEvent(a, row.RunID, row.SessionID, c.EventName(t))
	out, err := row.Output()
	if err != nil {
		return ev
	}
	ev.Content = out.Content
	if t == run.EventRunPaused {
		// What the run waits for, as the pause's own event tells it.
		ev.Requirements = out.Requirements
		for _, r := range out.Requirements {
			if r.ToolExecution != nil {
				ev.Tools = append(ev.Tools, *r.ToolExecution)
			}
		}
		ev.StepRequirements, ev.ErrorRequirements = out.StepRequirements, out.ErrorRequirements
		ev.PausedStepIndex, ev.PausedStepName = out.PausedStepIndex, out.PausedStepName
		if c.Type == run.TypeWorkflow {
			ev.TaskEvent = &run.TaskEvent{Status: string(run.StatusPaused)}
		}
	}
	return ev
}

// samePause reports whether rec, a stored pause event of a run, is the
// pause its PAUSED row tells: the same tool calls (or workflow steps)
// awaited. A run continued outside the log that paused again awaits
// others. An event that cannot be read is not the row's pause (the row's
// is sent); a row that cannot be read tells no other, nor does an event
// stored in place of one too large for the log (runlog.TooLargeEvent: a
// pause built from the row would be as large).
func samePause(rec runlog.Record, row *db.Run) bool {
	out, err := row.Output()
	if err != nil {
		return true
	}
	var ev run.Event
	if err := json.Unmarshal(rec.Data, &ev); err != nil {
		return false
	}
	if c, ok := ev.Content.(map[string]any); ok && c["event_too_large"] != nil {
		return true
	}
	return slices.Equal(pauseIdentity(ev.Requirements, ev.StepRequirements, ev.ErrorRequirements, ev.PausedStepIndex),
		pauseIdentity(out.Requirements, out.StepRequirements, out.ErrorRequirements, out.PausedStepIndex))
}

// pauseIdentity is what tells a run's pauses apart: the ids of the
// requirements awaited (tool call ids, new at every model turn), the
// workflow steps awaited with their executor runs' requirements, the
// failed steps awaited with their retry counts (a step failing again after
// a retry pauses the run at the same step, with a new failure), and the
// step the run paused at. What is resolved in place while the run stays
// paused is not part of it.
func pauseIdentity(reqs []run.Requirement, steps []run.StepRequirement, errs []run.ErrorRequirement, pausedStep *int) []string {
	var id []string
	tool := func(prefix string, r run.Requirement) string {
		if r.ID == "" && r.ToolExecution != nil {
			return prefix + "call:" + r.ToolExecution.ToolCallID
		}
		return prefix + "req:" + r.ID
	}
	for _, r := range reqs {
		id = append(id, tool("", r))
	}
	for _, s := range steps {
		id = append(id, "step:"+s.StepID+"/"+s.ExecutorRunID)
		for _, r := range s.ExecutorRequirements {
			id = append(id, tool("step:"+s.StepID+"/", r))
		}
	}
	for _, e := range errs {
		id = append(id, "error:"+e.StepID+"#"+strconv.Itoa(e.RetryCount))
	}
	if pausedStep != nil {
		id = append(id, "at:"+strconv.Itoa(*pausedStep))
	}
	slices.Sort(id)
	return id
}

// replayRow replays the events stored on a finished run's row (its log
// was deleted by retention, or it never had one): positions are the
// indexes, as Agno's database fallback numbers them. The log's indexes
// and the row's positions need not match (the row may keep fewer events),
// so an index at or past the last position is not refused: it gets the
// replay frame alone, or 204 on GET (see nothingMore). A client that sent
// no index gets the replay frame even when the row holds no event.
func (s *Server) replayRow(w http.ResponseWriter, r *http.Request, row *db.Run, after int64) error {
	out, err := row.Output()
	if err != nil {
		return err
	}
	if after >= 0 && after >= int64(len(out.Events))-1 && r.Method == http.MethodGet {
		w.WriteHeader(http.StatusNoContent)
		return nil
	}
	sse := newSSEWriter(w)
	var evs []run.Event
	for i, ev := range out.Events {
		if int64(i) > after {
			evs = append(evs, ev)
		}
	}
	meta := map[string]any{"event": "replay", "run_id": row.RunID, "status": row.Status, "total_events": len(evs),
		"message": "Run " + string(row.Status) + ". Replaying stored events from database."}
	if sse.WriteMeta("replay", meta) != nil {
		return nil
	}
	for i := range evs {
		ev := evs[i]
		if ev.RunID == "" {
			ev.RunID = row.RunID
		}
		if err := sse.WriteIndexed(int64(len(out.Events)-len(evs)+i), &ev); err != nil {
			return nil
		}
	}
	return nil
}

// resumeRun is POST (and GET, for EventSource) …/runs/{run_id}/resume:
// the run's events after last_event_index (form or query field) or
// Last-Event-ID, then live ones until the run ends. Another user's run,
// or a run of another component, is 404. The form takes only
// last_event_index and session_id, as Agno's; files and other fields are
// 422.
func (s *Server) resumeRun(w http.ResponseWriter, r *http.Request, a runTarget) error {
	fields := map[string]string{}
	if r.Method == http.MethodPost {
		lim := formLimits{}
		lim.fill()
		var files runRequest
		if err := readFormBody(r, lim, fields, &files); err != nil {
			return err
		}
		if len(files.Files) > 0 {
			return errorf(http.StatusUnprocessableEntity, "resuming a run takes no files")
		}
		for name := range fields {
			if name != "last_event_index" && name != "session_id" {
				return errorf(http.StatusUnprocessableEntity, "field %s is not supported by this server; the resume form takes last_event_index, session_id", safeName(name))
			}
		}
	}
	_, inForm := fields["last_event_index"]
	for _, k := range []string{"last_event_index", "session_id"} {
		if _, ok := fields[k]; !ok {
			if v := r.URL.Query().Get(k); v != "" {
				fields[k] = v
			}
		}
	}
	after, err := resumeFrom(r, fields["last_event_index"], !inForm)
	if err != nil {
		return err
	}
	row, err := s.loadRun(r, a, fields["session_id"])
	if err != nil {
		return err
	}
	return s.streamStored(w, r, a, row, after)
}

// runRecorded runs a background run, giving its events to add (nil: not
// recorded). Agents and teams deliver them through agent.WithEventFunc
// while Run executes; a workflow's Run does not, so a workflow is streamed
// and its outcome read back from its stored row.
func runRecorded(ctx context.Context, t runTarget, runID string, in run.Input, opts []agent.RunOption, add func(run.Event)) (*run.Output, error) {
	if add == nil {
		return t.Run(ctx, in, opts...)
	}
	opts = opts[:len(opts):len(opts)]
	if t.Component().Type != run.TypeWorkflow {
		return t.Run(ctx, in, append(opts, agent.WithEventFunc(add))...)
	}
	var serr error
	for ev, err := range t.Stream(ctx, in, opts...) {
		if err != nil {
			serr = err
			break
		}
		add(ev)
	}
	d := t.DB()
	if d == nil {
		return nil, serr
	}
	row, err := d.GetRun(context.WithoutCancel(ctx), runID)
	if err != nil {
		return nil, errors.Join(serr, err)
	}
	out, err := row.Output()
	if err != nil {
		return nil, errors.Join(serr, err)
	}
	return out, serr
}

// runEnd reads whether nothing can add events to a run (runlog.End): its
// row is final, no run of that id executes in this process and, for a job,
// its job is final; End.Attempt is then the job's last attempt, whose final
// event ends the run (one of an earlier attempt does not: the last
// attempt's last batch may land just after its job turned final, written
// by another replica). The row and the job are read in one statement
// (runlog.Log.State), so they agree. A row is stored final a moment before
// the run's terminal event is recorded, and the queue records the job's
// outcome in that same final save: an attempt executing here is still
// writing its last batch until it leaves the run registry (after its
// recorder closed). status is the row's status.
func (s *Server) runEnd(ctx context.Context, l *runlog.Log, runID string) (end runlog.End, status run.Status, err error) {
	st, err := l.State(ctx, runID, s.queue != nil)
	if err != nil {
		return runlog.End{}, "", err
	}
	if !finalStatus(st.Status) {
		return runlog.End{}, st.Status, nil
	}
	s.runs.mu.Lock()
	_, running := s.runs.flights[runID]
	s.runs.mu.Unlock()
	switch {
	case running:
		return runlog.End{}, st.Status, nil
	case st.Job:
		if st.JobStatus == queue.StatusQueued || st.JobStatus == queue.StatusRunning {
			return runlog.End{}, st.Status, nil
		}
		return runlog.End{Over: true, Attempt: st.JobAttempt}, st.Status, nil
	}
	return runlog.End{Over: true}, st.Status, nil
}
