package config

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/agentryhq/agentry/db/dbtest/testdbs"
	"github.com/agentryhq/agentry/knowledge"
)

// embeddingsServer answers OpenAI embeddings requests as OpenAI does: a
// text-embedding-3 vector has 1536 numbers unless the request asks for
// fewer with "dimensions". It records the dimensions asked for.
func embeddingsServer(t *testing.T) (url string, asked func() []int) {
	t.Helper()
	var mu sync.Mutex
	var dims []int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Input      []string `json:"input"`
			Dimensions *int     `json:"dimensions"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		n := 1536
		mu.Lock()
		if req.Dimensions != nil {
			n = *req.Dimensions
			dims = append(dims, n)
		} else {
			dims = append(dims, 0)
		}
		mu.Unlock()
		type item struct {
			Object    string    `json:"object"`
			Index     int       `json:"index"`
			Embedding []float32 `json:"embedding"`
		}
		out := struct {
			Object string `json:"object"`
			Data   []item `json:"data"`
			Model  string `json:"model"`
		}{Object: "list", Model: "text-embedding-3-small"}
		for i := range req.Input {
			v := make([]float32, n)
			v[i%n] = 1
			out.Data = append(out.Data, item{Object: "embedding", Index: i, Embedding: v})
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(out)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/v1", func() []int { mu.Lock(); defer mu.Unlock(); return append([]int(nil), dims...) }
}

// A text-embedding-3 model configured with fewer dimensions than its
// default asks the API for that many (its "dimensions" parameter), as
// Agno's OpenAIEmbedder does: the config never sent it, so dimensions: 512
// with text-embedding-3-small got 1536-number vectors and every insert
// failed. send_dimensions: false keeps the request without it.
func TestKnowledge_OpenAIEmbedderSendsTheConfiguredDimensions(t *testing.T) {
	t.Parallel()
	url, asked := embeddingsServer(t)
	for _, c := range []struct {
		extra string
		want  int
	}{
		{"", 512},
		{", send_dimensions: true", 512},
	} {
		cfg, err := Parse(fmt.Appendf(nil, "knowledge: {embedder: {provider: openai, model: text-embedding-3-small, dimensions: 512, base_url: %q, api_key: k%s}}\n", url, c.extra), "k.yaml")
		if err != nil {
			t.Fatal(err)
		}
		if err := cfg.Validate(); err != nil {
			t.Fatal(err)
		}
		kb, done, err := OpenKnowledge(context.Background(), cfg.Knowledge, testdbs.SQLite(t), t.TempDir(), slog.Default())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := kb.Insert(context.Background(), knowledge.Content{Name: "note", Text: "the deploy key rotates monthly"}); err != nil {
			t.Errorf("insert%s: %v", c.extra, err)
		}
		done()
	}
	for _, d := range asked() {
		if d != 512 {
			t.Errorf("requests asked for dimensions %v, want 512 each", asked())
			break
		}
	}
	// Off: the request carries no dimensions (a server that refuses the
	// parameter), and the answer must then have the configured length.
	cfg, err := Parse(fmt.Appendf(nil, "knowledge: {embedder: {provider: openai, model: text-embedding-3-small, dimensions: 1536, base_url: %q, api_key: k, send_dimensions: false}}\n", url), "k.yaml")
	if err != nil {
		t.Fatal(err)
	}
	before := len(asked())
	kb, done, err := OpenKnowledge(context.Background(), cfg.Knowledge, testdbs.SQLite(t), t.TempDir(), slog.Default())
	if err != nil {
		t.Fatal(err)
	}
	defer done()
	if _, err := kb.Insert(context.Background(), knowledge.Content{Name: "note", Text: "the deploy key rotates monthly"}); err != nil {
		t.Fatalf("insert without dimensions: %v", err)
	}
	if got := asked()[before:]; len(got) == 0 || got[0] != 0 {
		t.Errorf("send_dimensions: false sent dimensions %v", got)
	}
}
