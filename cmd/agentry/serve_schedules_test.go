package main

import (
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestServe_SchedulesFireThroughTheDurableQueue: `agentry serve` with
// schedules enabled starts the scheduler: a schedule created over HTTP is
// triggered, and its run completes through the durable queue.
func TestServe_SchedulesFireThroughTheDurableQueue(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	script := writeFile(t, "report.yaml", "turns:\n  - content: nightly report\n")
	cfg := writeFile(t, "agentos.yaml", `queue:
  durable: true
  poll_interval: 0.05
schedules:
  enabled: true
  poll_interval: 0.05
  catch_up: all
  max_catch_up: 3
agents:
  - id: cron
    model: scripted:`+script+`
`)
	base, stop := startServe(t, "--config", cfg, "--port", "0", "--db", filepath.Join(dir, "s.db"), "--data-dir", filepath.Join(dir, "data"))
	send := func(method, path, body string) (int, map[string]any) {
		t.Helper()
		req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		var v map[string]any
		json.Unmarshal(b, &v)
		return res.StatusCode, v
	}
	status, sc := send("POST", "/schedules", `{"name":"nightly","cron_expr":"0 3 * * *","timezone":"Europe/Berlin",`+
		`"endpoint":"/agents/cron/runs","payload":{"message":"report"}}`)
	if status != 201 {
		t.Fatalf("create: %d %v", status, sc)
	}
	id := sc["id"].(string)
	status, fired := send("POST", "/schedules/"+id+"/trigger", "")
	if status != 200 || fired["status"] != "running" || fired["run_id"] == nil {
		t.Fatalf("trigger: %d %v", status, fired)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		_, r := send("GET", "/schedules/"+id+"/runs/"+fired["id"].(string), "")
		if r["status"] == "success" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("schedule run never succeeded: %v", r)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if code, logs := stop(); code != 0 {
		t.Fatalf("exit %d:\n%s", code, logs)
	}
}

func TestServe_SchedulesWithoutTheDurableQueueAreRefused(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, c := range []struct{ yaml, want string }{
		{"schedules:\n  enabled: true\n", "schedules.enabled needs queue.durable: true"},
		{"schedules:\n  catch_up: all\n", "apply to a running scheduler only"},
		{"queue:\n  durable: true\nschedules:\n  enabled: true\n  catch_up: sometimes\n", `schedules.catch_up "sometimes"`},
	} {
		cfg := writeFile(t, "bad.yaml", c.yaml)
		code, _, errOut := cli(t, "serve", "--config", cfg, "--db", filepath.Join(dir, "a.db"), "--data-dir", filepath.Join(dir, "d"))
		if code == 0 || !strings.Contains(errOut, c.want) {
			t.Errorf("%q: exit %d, stderr %q, want it to mention %q", c.yaml, code, errOut, c.want)
		}
	}
}
