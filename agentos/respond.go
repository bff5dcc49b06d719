package agentos

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/media"
)

// httpError is an error with the status and client-facing detail to answer with.
type httpError struct {
	Status int
	Detail string
	// Err is the cause, for logs; never shown to the client.
	Err error
}

func (e *httpError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("%d %s: %v", e.Status, e.Detail, e.Err)
	}
	return fmt.Sprintf("%d %s", e.Status, e.Detail)
}

func (e *httpError) Unwrap() error { return e.Err }

// errorf builds an httpError whose detail is the formatted message.
func errorf(status int, format string, args ...any) *httpError {
	return &httpError{Status: status, Detail: fmt.Sprintf(format, args...)}
}

// writeJSON writes v as JSON with the status. HTML characters are not escaped,
// matching Python's json output.
func writeJSON(w http.ResponseWriter, status int, v any) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		status = http.StatusInternalServerError
		buf.Reset()
		buf.WriteString(`{"detail":"internal server error"}` + "\n")
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// writeError writes {"detail": detail} with the status.
func writeError(w http.ResponseWriter, status int, detail string) {
	writeJSON(w, status, map[string]string{"detail": detail})
}

// Client-facing details of storage failures: they never carry the
// database's own error, which may name its host, port, user and database.
const (
	detailDBUnavailable = "the database is unavailable; retry later"
	detailRunNotStored  = "the run could not be stored: the database is unavailable; retry later"
	detailMediaDown     = "the media storage is unavailable; retry later"
)

// statusClientClosedRequest is the status logged for a request whose client
// went away before it was answered (nginx's 499): not a server error.
const statusClientClosedRequest = 499

// statusOf maps an error to its HTTP status and client-facing detail:
// httpError as given, an over-limit body 413, db.ErrNotFound 404,
// db.ErrInvalidFilter, db.ErrInvalidRecord and a refused run option
// (agent.ErrUnsupportedOption) or schema (agent.ErrInvalidSchema) 422, an unavailable database
// or a run's storage failure 503 with a generic detail, unavailable media
// storage 503, a row the store cannot decode 500 naming it (table and key),
// anything else 500 with a generic detail.
func statusOf(err error) (int, string) {
	var he *httpError
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &he):
		return he.Status, he.Detail
	case errors.As(err, &mbe):
		return http.StatusRequestEntityTooLarge, fmt.Sprintf("request body is larger than %d bytes", mbe.Limit)
	case errors.Is(err, db.ErrNotFound):
		return http.StatusNotFound, "Not Found"
	case errors.Is(err, db.ErrInvalidFilter), errors.Is(err, db.ErrInvalidRecord), errors.Is(err, agent.ErrUnsupportedOption),
		errors.Is(err, agent.ErrInvalidSchema):
		return http.StatusUnprocessableEntity, err.Error()
	case errors.Is(err, db.ErrUnavailable), errors.Is(err, agent.ErrStorage):
		return http.StatusServiceUnavailable, detailDBUnavailable
	case errors.Is(err, media.ErrUnavailable):
		return http.StatusServiceUnavailable, detailMediaDown
	}
	if ce := (*db.CorruptRowError)(nil); errors.As(err, &ce) {
		// Name the row, never its content or the decoder's message,
		// which may quote it.
		return http.StatusInternalServerError, fmt.Sprintf("%s %s: stored data cannot be read", ce.Table, ce.ID)
	}
	return http.StatusInternalServerError, "internal server error"
}

// handlerFunc is a route handler: it writes its answer, or returns the error
// that handle answers with (nothing written yet).
type handlerFunc func(w http.ResponseWriter, r *http.Request) error

// handle adapts h to net/http: the error h returns is answered by writeErr,
// the one place a handler's failure becomes a response.
func (s *Server) handle(h handlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if err := h(w, r); err != nil {
			writeErr(w, r, s.log, err)
		}
	}
}

// writeErr answers with err's status and detail, logging 5xx causes with the
// request id. A request whose client went away (its context cancelled) is
// not a server error: it is logged as 499 and answered so, in case a
// half-closed client still reads.
func writeErr(w http.ResponseWriter, r *http.Request, log *slog.Logger, err error) {
	if clientGone(r, err) {
		log.InfoContext(r.Context(), "client closed request", "request_id", requestID(r.Context()), "path", r.URL.Path, "err", err)
		writeError(w, statusClientClosedRequest, "client closed request")
		return
	}
	status, detail := statusOf(err)
	if status >= 500 {
		log.ErrorContext(r.Context(), "request failed", "request_id", requestID(r.Context()), "path", r.URL.Path, "err", err)
	}
	writeError(w, status, detail)
}

// clientGone reports whether err is the request's own cancellation: the
// client closed its connection (or half-closed it: Go's server cannot tell).
func clientGone(r *http.Request, err error) bool {
	var he *httpError
	return !errors.As(err, &he) && r.Context().Err() != nil && errors.Is(err, context.Canceled)
}
