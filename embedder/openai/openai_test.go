package openai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentryhq/agentry/embedder"
	"github.com/agentryhq/agentry/model"
)

// server speaks the /embeddings wire format: each text's vector is
// [len(text), index-in-batch, 1]. fail answers the first calls with status.
func server(t *testing.T, fail []int) (*httptest.Server, *atomic.Int32, *[][]string) {
	t.Helper()
	var calls atomic.Int32
	var batches [][]string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := int(calls.Add(1))
		if r.URL.Path != "/v1/embeddings" || r.Header.Get("Authorization") != "Bearer k" {
			http.Error(w, "bad path or key", 400)
			return
		}
		if n <= len(fail) {
			w.Header().Set("Retry-After", "0")
			w.WriteHeader(fail[n-1])
			w.Write([]byte(`{"error":{"message":"slow down"}}`))
			return
		}
		var req request
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Model != "m" || req.EncodingFormat != "float" {
			http.Error(w, "bad body", 400)
			return
		}
		batches = append(batches, req.Input)
		type item struct {
			Object    string    `json:"object"`
			Index     int       `json:"index"`
			Embedding []float32 `json:"embedding"`
		}
		var data []item
		for i := len(req.Input) - 1; i >= 0; i-- { // out of order on purpose
			data = append(data, item{"embedding", i, []float32{float32(len(req.Input[i])), float32(i), 1}})
		}
		json.NewEncoder(w).Encode(map[string]any{"object": "list", "data": data, "model": "m", "usage": map[string]int{"prompt_tokens": 1, "total_tokens": 1}})
	}))
	t.Cleanup(srv.Close)
	return srv, &calls, &batches
}

func fastRetry() model.RetryConfig {
	return model.RetryConfig{MaxAttempts: 3, Delay: func(int, error) time.Duration { return time.Millisecond }}
}

func TestEmbed_BatchesInOrder(t *testing.T) {
	srv, _, batches := server(t, nil)
	e, err := New(Config{BaseURL: srv.URL + "/v1", APIKey: "k", Model: "m", Dimensions: 3, BatchSize: 2})
	if err != nil {
		t.Fatal(err)
	}
	vecs, err := e.Embed(context.Background(), []string{"a", "bb", "ccc", "dddd", "eeeee"})
	if err != nil {
		t.Fatal(err)
	}
	if len(*batches) != 3 {
		t.Fatalf("%d requests, want 3 batches of ≤2", len(*batches))
	}
	for i, v := range vecs {
		if int(v[0]) != i+1 {
			t.Fatalf("vector %d is %v: out of order", i, v)
		}
	}
}

func TestEmbed_RetriesRateLimitAndServerErrors(t *testing.T) {
	srv, calls, _ := server(t, []int{429, 503})
	e, _ := New(Config{BaseURL: srv.URL + "/v1", APIKey: "k", Model: "m", Dimensions: 3, Retry: fastRetry()})
	if _, err := e.Embed(context.Background(), []string{"x"}); err != nil {
		t.Fatal(err)
	}
	if calls.Load() != 3 {
		t.Fatalf("%d calls, want 2 failures + 1 success", calls.Load())
	}
}

func TestEmbed_GivesUpAfterMaxAttempts(t *testing.T) {
	srv, calls, _ := server(t, []int{500, 500, 500, 500})
	e, _ := New(Config{BaseURL: srv.URL + "/v1", APIKey: "k", Model: "m", Dimensions: 3, Retry: fastRetry()})
	_, err := e.Embed(context.Background(), []string{"x"})
	if !errors.Is(err, model.ErrServer) || calls.Load() != 3 {
		t.Fatalf("err %v after %d calls", err, calls.Load())
	}
}

func TestEmbed_BadRequestNotRetried(t *testing.T) {
	srv, calls, _ := server(t, []int{400, 400})
	e, _ := New(Config{BaseURL: srv.URL + "/v1", APIKey: "k", Model: "m", Dimensions: 3, Retry: fastRetry()})
	if _, err := e.Embed(context.Background(), []string{"x"}); !errors.Is(err, model.ErrBadRequest) || calls.Load() != 1 {
		t.Fatalf("err %v after %d calls", err, calls.Load())
	}
}

func TestEmbed_WrongDimensionsRefused(t *testing.T) {
	srv, _, _ := server(t, nil)
	e, _ := New(Config{BaseURL: srv.URL + "/v1", APIKey: "k", Model: "m", Dimensions: 4})
	if _, err := e.Embed(context.Background(), []string{"x"}); !errors.Is(err, embedder.ErrDimensions) {
		t.Fatalf("err %v", err)
	}
}

// A BaseURL with a query had "/embeddings" appended after it (the request
// went to the root with a mangled query); one without a scheme or host
// failed every call instead of New.
func TestNew_RefusesABaseURLThatCannotTakeThePath(t *testing.T) {
	for _, base := range []string{"https://h.example/v1?api-version=1", "https://h.example/v1?", "https://h.example/v1#x",
		"h.example/v1", "ftp://h.example/v1", "http:///v1", "http://[::1/v1"} {
		if _, err := New(Config{Model: "m", Dimensions: 3, BaseURL: base}); err == nil {
			t.Errorf("BaseURL %q accepted", base)
		}
	}
	e, err := New(Config{Model: "m", Dimensions: 3, BaseURL: "http://127.0.0.1:8080/v1/"})
	if err != nil || e.url != "http://127.0.0.1:8080/v1/embeddings" {
		t.Errorf("a good root: %v, %v", e, err)
	}
}

func TestNew_RequiresModelAndDimensions(t *testing.T) {
	if _, err := New(Config{Dimensions: 3}); err == nil {
		t.Fatal("no model accepted")
	}
	if _, err := New(Config{Model: "m"}); err == nil {
		t.Fatal("no dimensions accepted")
	}
}

// FuzzDecode: any answer gives exactly n vectors of Dimensions floats, in
// index order, or an error; never a panic or a short or sparse result.
func FuzzDecode(f *testing.F) {
	f.Add([]byte(`{"object":"list","data":[{"object":"embedding","index":1,"embedding":[1,2]},{"index":0,"embedding":[3,4]}]}`), 2)
	f.Add([]byte(`{"data":[{"index":0,"embedding":[1,2]},{"index":0,"embedding":[3,4]}]}`), 2)
	f.Add([]byte(`{"data":[{"index":0,"embedding":null}]}`), 1)
	f.Add([]byte(`{"data":[{"index":0,"embedding":[1e39,0]}]}`), 1)
	f.Add([]byte(`{"error":{"message":"x"}}`), 0)
	e, err := New(Config{Model: "m", Dimensions: 2})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, raw []byte, n int) {
		n = min(max(n, 0), 64)
		vecs, err := e.decode(raw, n)
		if err != nil {
			return
		}
		if len(vecs) != n {
			t.Fatalf("%d vectors for %d texts", len(vecs), n)
		}
		for i, v := range vecs {
			if len(v) != 2 {
				t.Fatalf("vector %d has %d floats", i, len(v))
			}
		}
	})
}

func TestDecode_MalformedAnswersRefused(t *testing.T) {
	e, _ := New(Config{Model: "m", Dimensions: 2})
	for _, raw := range []string{
		`{"data":[{"index":0,"embedding":[1,2]}]}`,                                  // fewer than asked
		`{"data":[{"index":0,"embedding":[1,2]},{"index":0,"embedding":[3,4]}]}`,    // repeated index
		`{"data":[{"index":0,"embedding":[1,2]},{"index":2,"embedding":[3,4]}]}`,    // index out of range
		`{"data":[{"index":0,"embedding":[1,2]},{"index":1,"embedding":[3,4]}]`,     // truncated
		`{"data":[{"index":0,"embedding":[1,2]},{"index":1,"embedding":[1e39,4]}]}`, // no float32
	} {
		if _, err := e.decode([]byte(raw), 2); !errors.Is(err, model.ErrMalformedResponse) {
			t.Errorf("%s: %v", raw, err)
		}
	}
}

// An error answer that quotes the API key (a gateway echoing the request's
// headers, a provider naming the key it refuses) must not carry the key
// into the error, which ends up in logs and a knowledge item's status.
func TestEmbed_ErrorDoesNotRepeatTheAPIKey(t *testing.T) {
	t.Parallel()
	const key = "sk-proj-0123456789abcdef"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprintf(w, `{"error":{"message":"Incorrect API key provided: %s","code":"invalid_api_key"}}`, strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "))
	}))
	t.Cleanup(srv.Close)
	srv2 := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusBadGateway)
		fmt.Fprintf(w, "<html>bad gateway; request headers: Authorization: %s</html>", r.Header.Get("Authorization"))
	}))
	t.Cleanup(srv2.Close)
	for _, url := range []string{srv.URL, srv2.URL} {
		e, err := New(Config{BaseURL: url, APIKey: key, Model: "m", Dimensions: 3, Retry: fastRetry()})
		if err != nil {
			t.Fatal(err)
		}
		_, err = e.Embed(context.Background(), []string{"x"})
		if err == nil || strings.Contains(err.Error(), key) {
			t.Fatalf("err = %v: holds the API key", err)
		}
	}
}

// "dimensions" goes on the wire only with SendDimensions; no texts make no
// request at all.
func TestEmbed_DimensionsParameterAndEmptyInput(t *testing.T) {
	t.Parallel()
	var (
		mu     sync.Mutex
		bodies []map[string]any
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body map[string]any
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		mu.Lock()
		bodies = append(bodies, body)
		mu.Unlock()
		fmt.Fprint(w, `{"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.5,0.5]}]}`)
	}))
	t.Cleanup(srv.Close)
	for _, send := range []bool{false, true} {
		e, err := New(Config{BaseURL: srv.URL, Model: "text-embedding-3-small", Dimensions: 2, SendDimensions: send})
		if err != nil {
			t.Fatal(err)
		}
		if vecs, err := e.Embed(context.Background(), nil); err != nil || len(vecs) != 0 {
			t.Fatalf("no texts: %v, %v", vecs, err)
		}
		if _, err := e.Embed(context.Background(), []string{"x"}); err != nil {
			t.Fatal(err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(bodies) != 2 {
		t.Fatalf("%d requests, want 2 (none for no texts)", len(bodies))
	}
	if _, ok := bodies[0]["dimensions"]; ok {
		t.Errorf("dimensions sent without SendDimensions: %v", bodies[0])
	}
	if bodies[1]["dimensions"] != 2.0 || bodies[1]["encoding_format"] != "float" {
		t.Errorf("request %v, want dimensions 2 and float encoding", bodies[1])
	}
}
