package agentos

import (
	"bufio"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestComponents_RunInProgressKeepsItsVersion: a run of a stored agent
// that started on version 1 (its model holds the answer for seconds)
// answers with version 1 although version 2 is published while it runs;
// the next run uses version 2.
func TestComponents_RunInProgressKeepsItsVersion(t *testing.T) {
	t.Parallel()
	for name, open := range componentDBs(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := newCompFixture(t, open(t))
			v1 := f.script(t, "v1", "answer one", "3s")
			want(t, f.send(t, f.alice, "POST", "/components", jsonBody(map[string]any{"name": "Slow", "component_id": "slow", "component_type": "agent",
				"stage": "published", "config": map[string]any{"model": v1}})), 201, `"current_version":1`)

			// A streamed run: its first event says it started, on version 1.
			req, err := http.NewRequest("POST", f.url+"/agents/slow/runs", strings.NewReader("message=hi&stream=true"))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			for k, v := range f.alice {
				req.Header.Set(k, v)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			br := bufio.NewReader(resp.Body)
			if line, err := br.ReadString('\n'); err != nil || !strings.Contains(line, "RunStarted") {
				t.Fatalf("first line %q, %v; want the RunStarted event", line, err)
			}
			first := make(chan string, 1)
			go func() {
				rest, _ := io.ReadAll(br)
				first <- string(rest)
			}()
			v2 := f.script(t, "v2", "answer two", "")
			want(t, f.send(t, f.alice, "POST", "/components/slow/configs", jsonBody(map[string]any{"config": map[string]any{"model": v2}, "stage": "published"})),
				201, `"version":2`, `"stage":"published"`)
			want(t, f.send(t, f.alice, "GET", "/components/slow", ""), 200, `"current_version":2`)
			select {
			case rest := <-first:
				if !strings.Contains(rest, "answer one") || strings.Contains(rest, "answer two") {
					t.Fatalf("the run that started on version 1 streamed %s", rest)
				}
			case <-time.After(60 * time.Second):
				t.Fatal("the first run never finished")
			}
			want(t, f.run(t, f.alice, "agents", "slow"), 200, "answer two")
		})
	}
}
