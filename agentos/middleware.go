package agentos

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"runtime/debug"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
)

// RequestIDHeader carries the request id in and out.
const RequestIDHeader = "X-Request-ID"

type requestIDKey struct{}

// requestID returns the request's id ("" outside a request).
func requestID(ctx context.Context) string {
	id, _ := ctx.Value(requestIDKey{}).(string)
	return id
}

// validRequestID keeps client-supplied ids short and log-safe.
func validRequestID(id string) bool {
	if id == "" || len(id) > 128 {
		return false
	}
	for _, c := range []byte(id) {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.' || c == ':'
		if !ok {
			return false
		}
	}
	return true
}

// requestIDs reuses a well-formed incoming X-Request-ID or makes one, and echoes it.
func requestIDs(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get(RequestIDHeader)
		if !validRequestID(id) {
			id = uuid.NewString()
		}
		w.Header().Set(RequestIDHeader, id)
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), requestIDKey{}, id)))
	})
}

// recorder captures status and size for the access log while passing Flush
// through (SSE) via Unwrap and http.ResponseController.
type recorder struct {
	http.ResponseWriter
	status int
	bytes  int64
}

func (rw *recorder) WriteHeader(status int) {
	if rw.status == 0 {
		rw.status = status
	}
	rw.ResponseWriter.WriteHeader(status)
}

func (rw *recorder) Write(p []byte) (int, error) {
	if rw.status == 0 {
		rw.status = http.StatusOK
	}
	n, err := rw.ResponseWriter.Write(p)
	rw.bytes += int64(n)
	return n, err
}

func (rw *recorder) Flush() {
	if rw.status == 0 {
		rw.status = http.StatusOK
	}
	_ = http.NewResponseController(rw.ResponseWriter).Flush()
}

func (rw *recorder) Unwrap() http.ResponseWriter { return rw.ResponseWriter }

// accessLog writes one structured line per request. The query string and
// headers are not logged: they may carry tokens.
func accessLog(log *slog.Logger) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			start := time.Now()
			rec := &recorder{ResponseWriter: w}
			defer func() {
				ctx := r.Context()
				if !log.Enabled(ctx, slog.LevelInfo) {
					return // the attributes are not built for a line nobody keeps
				}
				status := rec.status
				if status == 0 {
					status = http.StatusOK
				}
				log.LogAttrs(ctx, slog.LevelInfo, "http request",
					slog.String("method", r.Method),
					slog.String("path", r.URL.Path),
					slog.Int("status", status),
					slog.Int64("bytes", rec.bytes),
					slog.Duration("duration", time.Since(start)),
					slog.String("request_id", requestID(ctx)),
				)
			}()
			next.ServeHTTP(rec, r)
		})
	}
}

// recoverPanics turns a handler panic into 500 {"detail"} and logs it with the
// request id and stack; if the response had started, it aborts the connection.
func recoverPanics(log *slog.Logger) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			rec, ok := w.(*recorder)
			if !ok {
				rec = &recorder{ResponseWriter: w}
				w = rec
			}
			defer func() {
				v := recover()
				if v == nil {
					return
				}
				if v == http.ErrAbortHandler {
					panic(v)
				}
				log.ErrorContext(r.Context(), "panic serving request",
					"request_id", requestID(r.Context()), "method", r.Method, "path", r.URL.Path,
					"panic", fmt.Sprint(v), "stack", string(debug.Stack()))
				if rec.status != 0 {
					// The response already started (e.g. a stream): abort the
					// connection so the client sees a broken response, not a
					// clean end.
					panic(http.ErrAbortHandler)
				}
				writeError(rec, http.StatusInternalServerError, "internal server error")
			}()
			next.ServeHTTP(w, r)
		})
	}
}

// limitBody answers 413 for a declared Content-Length over limit and caps
// reads of the rest (handlers see *http.MaxBytesError, mapped to 413).
func limitBody(limit int64) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.ContentLength > limit {
				writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body is larger than %d bytes", limit))
				return
			}
			r.Body = http.MaxBytesReader(w, r.Body, limit)
			next.ServeHTTP(w, r)
		})
	}
}

// strictURL answers 422 when the query string does not parse, or when the
// path or a query parameter is not UTF-8 text or holds a NUL. url.Values
// silently drops a pair holding a ';' (no longer a separator) or a bad
// %-escape, so "?user_id=alice;" would otherwise list every user's sessions
// and "?sort_by=created_at;DROP…" would quietly sort by the default. A NUL
// or a byte that is not UTF-8 (/sessions/%00, ?user_id=%ff) names no stored
// object, and Postgres refuses it in a text parameter, so it used to reach
// the database and come back as a 500.
func strictURL(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !textOK(r.URL.Path) {
			writeError(w, http.StatusUnprocessableEntity,
				"invalid URL path: it must be UTF-8 text without NUL characters once percent-decoded")
			return
		}
		q, err := url.ParseQuery(r.URL.RawQuery)
		if err != nil {
			writeError(w, http.StatusUnprocessableEntity,
				"invalid query string: "+err.Error()+"; separate parameters with & and percent-encode ; and % in values (%3B, %25)")
			return
		}
		for k, vs := range q {
			if !textOK(k) || slices.ContainsFunc(vs, func(v string) bool { return !textOK(v) }) {
				writeError(w, http.StatusUnprocessableEntity,
					"invalid query string: parameter "+safeName(k)+" must be UTF-8 text without NUL characters once percent-decoded")
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// textOK reports whether s is UTF-8 without NUL characters, which every
// database stores in a text column.
func textOK(s string) bool {
	return utf8.ValidString(s) && !strings.ContainsRune(s, 0)
}
