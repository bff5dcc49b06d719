package agentos

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/dbtest/testdbs"
	"github.com/agentryhq/agentry/embedder/local"
	"github.com/agentryhq/agentry/knowledge"
	"github.com/agentryhq/agentry/vectordb/embedded"
)

// syncBuffer is a log sink safe for the server's goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// testServer starts cfg's server on loopback; extra mounts test-only routes.
func testServer(t *testing.T, cfg Config, extra func(s *Server)) (*httptest.Server, *syncBuffer) {
	t.Helper()
	logs := &syncBuffer{}
	cfg.Logger = slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if extra != nil {
		extra(s)
	}
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)
	return ts, logs
}

type response struct {
	status int
	header http.Header
	body   string
}

func (r response) detail(t *testing.T) string {
	t.Helper()
	var d struct {
		Detail *string `json:"detail"`
	}
	if err := json.Unmarshal([]byte(r.body), &d); err != nil || d.Detail == nil {
		t.Fatalf("body %q is not {\"detail\": ...}", r.body)
	}
	return *d.Detail
}

// do sends a request over the loopback connection.
func do(t *testing.T, method, url string, body io.Reader, header map[string]string) response {
	t.Helper()
	req, err := http.NewRequest(method, url, body)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	data, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return response{status: res.StatusCode, header: res.Header, body: string(data)}
}

func get(t *testing.T, url string, header map[string]string) response {
	t.Helper()
	return do(t, http.MethodGet, url, nil, header)
}

func contains(s string, subs ...string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}

// sqliteAndPostgres opens the two SQL databases the input tests run on:
// SQLite stores what Postgres refuses (a NUL, a REAL in an integer column).
var sqliteAndPostgres = map[string]testdbs.Opener{"sqlite": testdbs.SQLite, "postgres": testdbs.Postgres}

// testKnowledge is knowledge base "kb" on d, with the local embedder and an
// embedded vector store of 64 dimensions in a temporary file; maxBytes is
// its MaxBytes (0: the default).
func testKnowledge(t *testing.T, d *db.DB, maxBytes int64) *knowledge.Knowledge {
	t.Helper()
	e := local.New(local.Config{Dimensions: 64})
	vs, err := embedded.Open(context.Background(), embedded.Config{Path: filepath.Join(t.TempDir(), "v.db"), Dimensions: 64, EmbedderID: e.ID()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { vs.Close() })
	k, err := knowledge.New(knowledge.Config{Name: "kb", DB: d, Vectors: vs, Embedder: e, MaxBytes: maxBytes})
	if err != nil {
		t.Fatal(err)
	}
	return k
}
