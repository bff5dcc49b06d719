package agentos

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/agentryhq/agentry/run"
)

// sseWriter streams run events as Server-Sent Events in AgentOS's shape:
// "event: <Name>\ndata: <compact JSON>\n\n", flushed after each frame. The
// response headers are sent with the first frame, so a handler can still
// answer with an HTTP error before streaming starts. Not safe for concurrent use.
type sseWriter struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	buf     bytes.Buffer
	enc     *json.Encoder
	started bool
	// run and grace: see interruptible.
	run   context.Context
	grace time.Duration
}

// newSSEWriter wraps a response.
func newSSEWriter(w http.ResponseWriter) *sseWriter {
	s := &sseWriter{w: w, rc: http.NewResponseController(w)}
	s.enc = json.NewEncoder(&s.buf)
	s.enc.SetEscapeHTML(false)
	return s
}

// interruptible bounds the writes of a stream whose run ctx may end (a
// cancel, a shutdown): once it has ended, a write the client does not take
// within grace fails, as for a client that is gone. Without it, a client
// that stopped reading but keeps its connection holds the run in a blocked
// write for ever, where no cancellation reaches it. Writes before the end
// are not bounded (a slow reader is still a reader). release must be
// called before the handler returns; after it, the writer is not bounded.
func (s *sseWriter) interruptible(run context.Context, grace time.Duration) (release func()) {
	s.run, s.grace = run, grace
	done := make(chan struct{})
	stop := context.AfterFunc(run, func() {
		defer close(done)
		// The write in progress, if any (the next ones re-arm in write).
		_ = s.rc.SetWriteDeadline(time.Now().Add(grace))
	})
	return func() {
		if !stop() {
			// The deadline is being set: let it be set before the handler
			// returns (the connection may serve another request after).
			<-done
		}
		s.run = nil
	}
}

// write writes b to the response, bounded after the run's end
// (interruptible).
func (s *sseWriter) write(b []byte) error {
	if s.run != nil && s.run.Err() != nil {
		_ = s.rc.SetWriteDeadline(time.Now().Add(s.grace))
	}
	_, err := s.w.Write(b)
	return err
}

// Started reports whether headers (and so the 200 status) were sent.
func (s *sseWriter) Started() bool { return s.started }

// Start sends the 200 response headers for an event stream, once.
func (s *sseWriter) Start() error {
	if s.started {
		return nil
	}
	s.start()
	return s.flush()
}

// start writes the headers without flushing them: the first frame goes out
// in the same flush (one write to the socket instead of two before the
// client sees RunStarted).
func (s *sseWriter) start() {
	if s.started {
		return
	}
	h := s.w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("Connection", "keep-alive")
	h.Set("X-Accel-Buffering", "no")
	s.w.WriteHeader(http.StatusOK)
	s.started = true
}

// WriteEvent writes one event frame and flushes it. The JSON carries the name
// in "event", has no top-level "data" key and omits null fields (run.Event's
// tags); a write error means the client is gone.
func (s *sseWriter) WriteEvent(ev *run.Event) error {
	if ev == nil || ev.Event == "" {
		return errors.New("agentos: sse event has no name")
	}
	if strings.ContainsAny(string(ev.Event), "\r\n") {
		return fmt.Errorf("agentos: sse event name %q contains a line break", ev.Event)
	}
	s.start()
	s.buf.Reset()
	s.buf.WriteString("event: ")
	s.buf.WriteString(string(ev.Event))
	s.buf.WriteString("\ndata: ")
	if err := s.enc.Encode(ev); err != nil {
		return fmt.Errorf("agentos: encode %s event: %w", ev.Event, err)
	}
	// Encode ended the JSON with "\n"; one more ends the frame.
	s.buf.WriteByte('\n')
	if err := s.write(s.buf.Bytes()); err != nil {
		return err
	}
	return s.flush()
}

// Comment writes an SSE comment line (": text"), e.g. a keep-alive.
func (s *sseWriter) Comment(text string) error {
	s.start()
	text = strings.NewReplacer("\r", " ", "\n", " ").Replace(text)
	if err := s.write([]byte(": " + text + "\n\n")); err != nil {
		return err
	}
	return s.flush()
}

func (s *sseWriter) flush() error {
	if err := s.rc.Flush(); err != nil && !errors.Is(err, http.ErrNotSupported) {
		return err
	}
	return nil
}

// WriteMeta writes a frame of the resume stream's own (replay, subscribed,
// error: Agno's names), without an id: it is not one of the run's events.
func (s *sseWriter) WriteMeta(name string, v any) error {
	s.start()
	s.buf.Reset()
	s.buf.WriteString("event: " + name + "\ndata: ")
	if err := s.enc.Encode(v); err != nil {
		return err
	}
	s.buf.WriteByte('\n')
	if err := s.write(s.buf.Bytes()); err != nil {
		return err
	}
	return s.flush()
}

// WriteStored writes a stored event (its JSON object as recorded) with its
// index: "id: <index>" for EventSource's Last-Event-ID, and "event_index"
// added to the JSON for Agno's clients.
func (s *sseWriter) WriteStored(index int64, name string, data []byte) error {
	if strings.ContainsAny(name, "\r\n") || len(data) < 2 || data[0] != '{' || bytes.ContainsAny(data, "\r\n") {
		return fmt.Errorf("agentos: stored event %d is not one JSON object line", index)
	}
	s.start()
	s.buf.Reset()
	s.buf.WriteString("id: ")
	s.buf.WriteString(strconv.FormatInt(index, 10))
	s.buf.WriteString("\nevent: ")
	s.buf.WriteString(name)
	s.buf.WriteString("\ndata: {\"event_index\":")
	s.buf.WriteString(strconv.FormatInt(index, 10))
	if len(data) > 2 {
		s.buf.WriteByte(',')
	}
	s.buf.Write(data[1:])
	s.buf.WriteString("\n\n")
	if err := s.write(s.buf.Bytes()); err != nil {
		return err
	}
	return s.flush()
}

// WriteIndexed writes ev with index as WriteStored does.
func (s *sseWriter) WriteIndexed(index int64, ev *run.Event) error {
	data, err := storedEvent(ev)
	if err != nil {
		return err
	}
	return s.WriteStored(index, string(ev.Event), data)
}
