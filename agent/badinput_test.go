package agent

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/dbtest/testdbs"
	"github.com/agentryhq/agentry/db/memory"
	"github.com/agentryhq/agentry/model"
	"github.com/agentryhq/agentry/model/scripted"
	"github.com/agentryhq/agentry/offload"
	"github.com/agentryhq/agentry/run"
	"github.com/agentryhq/agentry/tool"
	"github.com/agentryhq/agentry/tool/netguard"
)

// imageServer serves one JPEG on loopback and counts its requests.
func imageServer(t *testing.T, body []byte) (string, *atomic.Int32) {
	t.Helper()
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		w.Header().Set("Content-Type", "image/jpeg")
		w.Write(body)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/cat.jpg?X-Amz-Signature=secret", &n
}

// A media URL on a loopback or private address is not fetched (SSRF): the
// run ends in ERROR with a clear message, the model is never called, and
// the stored run keeps the URL only.
func TestRemoteMedia_LoopbackURLIsRefused(t *testing.T) {
	t.Parallel()
	d := testdbs.SQLite(t)
	u, hits := imageServer(t, jpeg(1000))
	rec := &recorder{Model: scripted.Reply("never")}
	a := mustAgent(t, Config{Model: rec, DB: d})
	in := run.Input{InputContent: "what is this?", Images: []run.Media{{URL: u, MIMEType: "image/jpeg"}}}
	out, err := a.Run(context.Background(), in, WithSessionID("s"), WithRunID("ssrf-run"))
	if !errors.Is(err, ErrRemoteMedia) || !errors.Is(err, netguard.ErrBlocked) {
		t.Fatalf("error = %v, want ErrRemoteMedia and netguard.ErrBlocked", err)
	}
	if out.Status != run.StatusError || hits.Load() != 0 || len(rec.requests()) != 0 {
		t.Fatalf("status %s, %d fetches, %d model calls", out.Status, hits.Load(), len(rec.requests()))
	}
	if strings.Contains(err.Error(), "secret") {
		t.Fatalf("the error shows the URL's signature: %v", err)
	}
	row, err := d.GetRun(context.Background(), "ssrf-run")
	if err != nil {
		t.Fatal(err)
	}
	if row.Status != run.StatusError || !strings.Contains(string(row.RunData), "remote media could not be fetched") {
		t.Fatalf("stored %s: %.300s", row.Status, row.RunData)
	}
}

// Allowed by Config.RemoteMedia, the bytes are fetched once for a model
// that needs them; the stored run keeps the URL, not the bytes. A model
// that takes URLs gets the URL and nothing is fetched.
func TestRemoteMedia_FetchedOnlyForModelsThatNeedBytes(t *testing.T) {
	t.Parallel()
	d := testdbs.SQLite(t)
	img := jpeg(5000)
	u, hits := imageServer(t, img)
	allow := netguard.Config{AllowNetworks: []string{"127.0.0.1/32", "::1/128"}}
	rec := &recorder{Model: script(t, scripted.Turn{ToolCalls: []scripted.ToolCall{{ID: "c", Name: "noop"}}}, scripted.Turn{Content: "a cat"})}
	noop := funcTool("noop", tool.FuncConfig{}, func(context.Context) (string, error) { return "ok", nil })
	a := mustAgent(t, Config{Model: rec, DB: d, RemoteMedia: allow, Tools: []tool.Tool{noop}})
	in := run.Input{InputContent: "what is this?", Images: []run.Media{{URL: u}}}
	if _, err := a.Run(context.Background(), in, WithSessionID("s"), WithRunID("fetch-run")); err != nil {
		t.Fatal(err)
	}
	reqs := rec.requests()
	for _, r := range reqs {
		if p := r[len(r)-1].Parts; len(p) == 1 && !bytes.Equal(p[0].Data, img) {
			t.Fatal("the model did not get the fetched bytes")
		}
	}
	if p := reqs[0][len(reqs[0])-1].Parts; len(p) != 1 || !bytes.Equal(p[0].Data, img) || p[0].MIMEType != "image/jpeg" {
		t.Fatalf("first request parts = %+v", p)
	}
	if hits.Load() != 1 {
		t.Fatalf("fetched %d times for 2 model calls, want 1", hits.Load())
	}
	row, err := d.GetRun(context.Background(), "fetch-run")
	if err != nil {
		t.Fatal(err)
	}
	if len(row.RunData) > 8000 || !strings.Contains(string(row.RunData), "/cat.jpg") {
		t.Fatalf("stored run (%d bytes) holds the bytes or lost the URL", len(row.RunData))
	}
	// a model taking image URLs gets the URL itself
	rec2 := &recorder{Model: scripted.Reply("ok")}
	b := mustAgent(t, Config{Model: urlModel{rec2}, RemoteMedia: allow})
	if _, err := b.Run(context.Background(), in); err != nil {
		t.Fatal(err)
	}
	r0 := rec2.requests()[0]
	if p := r0[len(r0)-1].Parts; len(p) != 1 || p[0].URL != u || p[0].Data != nil || hits.Load() != 1 {
		t.Fatalf("parts = %+v, fetches %d", p, hits.Load())
	}
}

// A history message's media URL is fetched for a model that needs bytes
// into a copy of the history run's messages: the next run's request
// carries the bytes, the history cache (shared with every request) keeps
// the URL alone.
func TestRemoteMedia_HistoryIsFetchedIntoACopyNotTheCache(t *testing.T) {
	t.Parallel()
	img := jpeg(3000)
	u, hits := imageServer(t, img)
	allow := netguard.Config{AllowNetworks: []string{"127.0.0.1/32", "::1/128"}}
	rec := &recorder{Model: scripted.Reply("a cat")}
	a := mustAgent(t, Config{Model: rec, DB: db.New("", memory.New()), AddHistoryToContext: true, RemoteMedia: allow})
	ctx := context.Background()
	if _, err := a.Run(ctx, run.Input{InputContent: "what is this?", Images: []run.Media{{URL: u}}}, WithSessionID("s")); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Run(ctx, run.TextInput("and its colour?"), WithSessionID("s")); err != nil {
		t.Fatal(err)
	}
	reqs := rec.requests()
	if len(reqs) != 2 {
		t.Fatalf("%d model calls, want 2", len(reqs))
	}
	var got []string
	for _, m := range reqs[1] {
		got = append(got, string(m.Role)+":"+m.Content)
	}
	if fmt.Sprint(got) != fmt.Sprint([]string{"user:what is this?", "assistant:a cat", "user:and its colour?"}) {
		t.Fatalf("second request %q", got)
	}
	if p := reqs[1][0].Parts; len(p) != 1 || !bytes.Equal(p[0].Data, img) || !reqs[1][0].FromHistory {
		t.Fatalf("the history message's parts in the second request = %+v", p)
	}
	if hits.Load() != 2 {
		t.Errorf("fetched %d times for two runs, want 2 (once a run)", hits.Load())
	}
	c := &a.prep().history
	c.mu.Lock()
	defer c.mu.Unlock()
	cached := 0
	for _, e := range c.entries {
		for _, m := range e.msgs {
			for _, p := range m.Parts {
				cached++
				if p.Data != nil || p.URL != u {
					t.Errorf("the history cache holds a part with %d bytes and URL %q: fetched bytes were written into it", len(p.Data), p.URL)
				}
			}
		}
	}
	if cached != 1 {
		t.Fatalf("%d media parts in the history cache, want the first run's 1", cached)
	}
}

func TestRemoteMedia_OversizedAndMissingAreClearErrors(t *testing.T) {
	t.Parallel()
	allow := netguard.Config{AllowNetworks: []string{"127.0.0.1/32", "::1/128"}}
	big, _ := imageServer(t, make([]byte, MaxRemoteMediaBytes+1))
	missing := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(missing.Close)
	for name, u := range map[string]string{"oversized": big, "missing": missing.URL + "/gone.png", "not http": "ftp://127.0.0.1/x.png"} {
		a := mustAgent(t, Config{Model: scripted.Reply("never"), RemoteMedia: allow})
		in := run.Input{InputContent: "x", Images: []run.Media{{URL: u}}}
		out, err := a.Run(context.Background(), in)
		if name == "not http" {
			// not fetched by the agent: the model gets the URL as given
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			continue
		}
		if !errors.Is(err, ErrRemoteMedia) || out.Status != run.StatusError {
			t.Fatalf("%s: error = %v, status %s", name, err, out.Status)
		}
	}
}

// A tool returning 100 MB in an offloading agent: the store refuses it
// (8 MB per file), the model and the stored run get a stored="false"
// envelope with head and tail, and nothing is stored half-way.
func TestOffload_A100MBToolResultIsCutAndNothingStoredHalfWay(t *testing.T) {
	t.Parallel()
	d := testdbs.SQLite(t)
	huge := funcTool("huge", tool.FuncConfig{}, func(context.Context) (string, error) {
		return strings.Repeat("0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcde\n", 100<<20/64), nil
	})
	rec := &recorder{Model: script(t, scripted.Turn{ToolCalls: []scripted.ToolCall{{ID: "c", Name: "huge"}}}, scripted.Turn{Content: "done"})}
	a := mustAgent(t, Config{Model: rec, DB: d, Tools: []tool.Tool{huge}, OffloadToolResults: &offload.Config{}})
	out, err := a.Run(context.Background(), run.TextInput("x"), WithSessionID("s"), WithRunID("huge-run"))
	if err != nil || out.Status != run.StatusCompleted {
		t.Fatalf("run: %v", err)
	}
	reqs := rec.requests()
	last := reqs[1][len(reqs[1])-1]
	if last.Role != model.RoleTool || !strings.Contains(last.Content, `stored="false"`) || len(last.Content) > 10_000 {
		t.Fatalf("tool message (%d bytes): %.300s", len(last.Content), last.Content)
	}
	row, err := d.GetRun(context.Background(), "huge-run")
	if err != nil {
		t.Fatal(err)
	}
	if len(row.RunData) > 40_000 {
		t.Fatalf("stored run is %d bytes", len(row.RunData))
	}
	ids, err := d.ListToolResults(context.Background(), "s", 10)
	if err != nil || len(ids) != 0 {
		t.Fatalf("index rows of a refused result: %+v (%v)", ids, err)
	}
}

// The guard is built on first use, but an allow list that cannot work is
// still refused by New, not at the first fetch.
func TestRemoteMedia_BadAllowListIsRefusedByNew(t *testing.T) {
	t.Parallel()
	for _, rm := range []netguard.Config{{AllowNetworks: []string{"10.0.0.0/99"}}, {AllowHosts: []string{"http://x.internal"}}} {
		if _, err := New(Config{Model: scripted.Reply("x"), RemoteMedia: rm}); err == nil || !strings.Contains(err.Error(), "RemoteMedia") {
			t.Errorf("New with %+v = %v, want a RemoteMedia error", rm, err)
		}
	}
}

// Concurrent first runs share one lazily built guard (run with -race): each
// refuses the loopback URL.
func TestRemoteMedia_LazyGuardUnderConcurrentFirstUse(t *testing.T) {
	t.Parallel()
	u, hits := imageServer(t, jpeg(100))
	a := mustAgent(t, Config{Model: scripted.Reply("never")})
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = a.Run(context.Background(), run.Input{InputContent: "?", Images: []run.Media{{URL: u, MIMEType: "image/jpeg"}}})
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if !errors.Is(err, netguard.ErrBlocked) {
			t.Errorf("run = %v, want netguard.ErrBlocked", err)
		}
	}
	if hits.Load() != 0 {
		t.Errorf("%d fetches", hits.Load())
	}
}
