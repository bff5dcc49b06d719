package loadgen

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

type resultKind int

const (
	resultOK resultKind = iota
	resultStatus
	resultTransport
	resultBadBody
	resultRunError
)

// result is one request's outcome.
type result struct {
	kind       resultKind
	code       int    // resultStatus
	msg        string // failures
	latency    time.Duration
	firstEvent time.Duration // streams
}

// worker is one client: at most one request in flight, its own samples (merged
// after the phase, so recording takes no lock) and, in per-worker session
// mode, its own session.
type worker struct {
	cfg       *Config
	url       string
	client    *http.Client
	sessionID string
	form      []byte
	buf       bytes.Buffer
	frames    *frameReader

	latency    []time.Duration
	firstEvent []time.Duration
	failures   Failures
	errors     []string
}

func newWorker(cfg *Config, runsURL string, client *http.Client) *worker {
	w := &worker{cfg: cfg, url: runsURL, client: client, frames: newFrameReader(maxBody)}
	w.encodeForm()
	return w
}

func (w *worker) encodeForm() {
	v := url.Values{"message": {w.cfg.Message}, "stream": {strconv.FormatBool(w.cfg.Stream)}}
	if w.sessionID != "" {
		v.Set("session_id", w.sessionID)
	}
	w.form = []byte(v.Encode())
}

// learnSession keeps the server's session id for the next request.
func (w *worker) learnSession(id string) {
	if w.cfg.SessionMode == SessionPerWorker && w.sessionID == "" && id != "" {
		w.sessionID = id
		w.encodeForm()
	}
}

func (w *worker) reset() {
	w.latency, w.firstEvent = w.latency[:0], w.firstEvent[:0]
	w.failures, w.errors = Failures{}, nil
}

func (w *worker) record(r result) {
	switch r.kind {
	case resultOK:
		w.latency = append(w.latency, r.latency)
		if w.cfg.Stream {
			w.firstEvent = append(w.firstEvent, r.firstEvent)
		}
		return
	case resultStatus:
		if w.failures.Status == nil {
			w.failures.Status = map[int]int{}
		}
		w.failures.Status[r.code]++
	case resultTransport:
		w.failures.Transport++
	case resultBadBody:
		w.failures.BadBody++
	case resultRunError:
		w.failures.RunError++
	}
	if len(w.errors) < maxErrorSamples && r.msg != "" {
		w.errors = append(w.errors, r.msg)
	}
}

func fail(kind resultKind, format string, args ...any) result {
	msg := fmt.Sprintf(format, args...)
	if len(msg) > 300 {
		msg = strings.ToValidUTF8(msg[:300], "") + "…"
	}
	return result{kind: kind, msg: msg}
}

// do sends one run request and classifies the response.
func (w *worker) do(ctx context.Context) result {
	ctx, cancel := context.WithTimeout(ctx, w.cfg.RequestTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.url, bytes.NewReader(w.form))
	if err != nil {
		return fail(resultTransport, "build request: %v", err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if w.cfg.Stream {
		req.Header.Set("Accept", "text/event-stream")
	} else {
		req.Header.Set("Accept", "application/json")
	}
	if w.cfg.BearerToken != "" {
		req.Header.Set("Authorization", "Bearer "+w.cfg.BearerToken)
	}
	start := time.Now()
	resp, err := w.client.Do(req)
	if err != nil {
		return fail(resultTransport, "transport: %v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		// Read a little so the connection can be reused and the detail shown.
		detail, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		r := fail(resultStatus, "HTTP %d: %s", resp.StatusCode, bytes.TrimSpace(detail))
		r.code = resp.StatusCode
		return r
	}
	if w.cfg.Stream {
		return w.readStream(resp, start)
	}
	return w.readJSON(resp, start)
}

// runStatus is what the generator checks in a run JSON or a RunStarted event;
// content is only decoded for failures (runFailure), so a long reply costs no
// allocation.
type runStatus struct {
	Status    string `json:"status"`
	SessionID string `json:"session_id"`
}

type runFailure struct {
	Content any `json:"content"`
}

func failureContent(data []byte) any {
	var f runFailure
	_ = json.Unmarshal(data, &f)
	return f.Content
}

func (w *worker) readJSON(resp *http.Response, start time.Time) result {
	w.buf.Reset()
	if _, err := w.buf.ReadFrom(io.LimitReader(resp.Body, maxBody+1)); err != nil {
		return fail(resultTransport, "transport: read body: %v", err)
	}
	lat := time.Since(start)
	if w.buf.Len() > maxBody {
		return fail(resultBadBody, "bad body: larger than %d bytes", maxBody)
	}
	var run runStatus
	if err := json.Unmarshal(w.buf.Bytes(), &run); err != nil {
		return fail(resultBadBody, "bad body: %v", err)
	}
	switch run.Status {
	case "COMPLETED":
		w.learnSession(run.SessionID)
		return result{kind: resultOK, latency: lat}
	case "ERROR":
		return fail(resultRunError, "run error: %v", failureContent(w.buf.Bytes()))
	}
	return fail(resultBadBody, "bad body: run status %q, want COMPLETED", run.Status)
}

func (w *worker) readStream(resp *http.Response, start time.Time) result {
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		return fail(resultBadBody, "bad body: content type %q, want text/event-stream", ct)
	}
	var (
		first, lat time.Duration
		n          int
		done       bool
	)
	w.frames.reset(resp.Body)
	defer w.frames.reset(nil) // drop the body
	for {
		ev, data, err := w.frames.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			if errors.Is(err, io.ErrUnexpectedEOF) {
				return fail(resultBadBody, "bad body: stream cut off inside an event after %d events", n)
			}
			if errors.Is(err, errLineTooLong) || errors.Is(err, errEventTooLarge) {
				return fail(resultBadBody, "bad body: %v", err)
			}
			return fail(resultTransport, "transport: read stream: %v", err)
		}
		n++
		if done {
			continue // drain to EOF so the connection is reused
		}
		if n == 1 {
			first = time.Since(start)
			if string(ev) != "RunStarted" {
				return fail(resultBadBody, "bad body: first event %q, want RunStarted", ev)
			}
			var started runStatus
			if err := json.Unmarshal(data, &started); err != nil {
				return fail(resultBadBody, "bad body: RunStarted data: %v", err)
			}
			w.learnSession(started.SessionID)
		}
		switch string(ev) {
		case "RunCompleted":
			lat, done = time.Since(start), true
		case "RunError":
			return fail(resultRunError, "run error: %v", failureContent(data))
		case "RunCancelled", "RunPaused":
			return fail(resultBadBody, "bad body: run ended with %s", ev)
		}
	}
	if !done {
		return fail(resultBadBody, "bad body: stream ended without RunCompleted after %d events", n)
	}
	return result{kind: resultOK, latency: lat, firstEvent: first}
}
