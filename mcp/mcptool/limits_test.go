package mcptool_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentryhq/agentry/mcp/mcptool"
)

// A server answering a call with a JSON body larger than the SDK's limit
// for one SSE event or stdio message (16 MiB) fails the call once that much
// is read: the SDK reads a JSON answer whole, so a server sending without
// end had the agent's process read (and hold) all of it.
func TestToolkit_HugeJSONAnswerIsNotReadWhole(t *testing.T) {
	const total = 64 << 20
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return testServer() }, nil)
	wroteAll := make(chan bool, 1)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if !bytes.Contains(body, []byte(`"tools/call"`)) {
			r.Body = io.NopCloser(bytes.NewReader(body))
			h.ServeHTTP(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		chunk := []byte(`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"` + strings.Repeat("x", 64<<10))
		for n := 0; n < total; n += len(chunk) {
			if _, err := w.Write(chunk); err != nil {
				wroteAll <- false
				return
			}
			chunk = bytes.Repeat([]byte("x"), 64<<10)
		}
		wroteAll <- true
	}))
	t.Cleanup(ts.Close)
	k := newKit(t, mcptool.Config{URL: ts.URL, Timeout: 10 * time.Minute})
	tools, err := k.Tools(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := find(t, tools, "echo").Call(context.Background(), json.RawMessage(`{"text":"x"}`)); err == nil {
		t.Fatal("a call answered with 64 MiB of broken JSON succeeded")
	}
	if <-wroteAll {
		t.Fatalf("the toolkit read the whole %d-byte answer", total)
	}
}
