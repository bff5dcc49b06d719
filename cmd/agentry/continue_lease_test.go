package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// pausedRunReplicas starts two `agentry serve` replicas on one fresh
// Postgres database, serving agent "hitl": its model calls http_request
// (GET target, a loopback server of the test) with a human review that
// asks for a confirmation; the durable queue is on.
func pausedRunReplicas(t *testing.T, target string) []*replica {
	t.Helper()
	bin, err := agentryBinary()
	if err != nil {
		t.Fatal(err)
	}
	dsn := chaosPostgres(t)
	dir := t.TempDir()
	u, _ := url.Parse(target)
	host, port, _ := net.SplitHostPort(u.Host)
	script := filepath.Join(dir, "hitl.yaml")
	if err := os.WriteFile(script, []byte(`turns:
  - tool_calls:
      - name: http_request
        args: {method: GET, url: "`+target+`"}
  - content: all done
`), 0o644); err != nil {
		t.Fatal(err)
	}
	var rs []*replica
	for _, name := range []string{"a", "b"} {
		cfg := filepath.Join(dir, name+".yaml")
		if err := os.WriteFile(cfg, []byte(fmt.Sprintf(`agents:
  - id: hitl
    model: scripted:%s
    tools:
      - name: http_request
        options: {allowed_hosts: ["%s"], allow_networks: ["127.0.0.0/8"], ports: [%s], timeout: 60s}
        human_review: {requires_confirmation: true}
queue:
  durable: true
  lock_grace_seconds: %d
  poll_interval: 0.2
  deployment_id: %s
`, script, host, port, leaseGrace, name)), 0o644); err != nil {
			t.Fatal(err)
		}
		r := &replica{t: t, name: name, bin: bin, addr: freeAddr(t), logPath: filepath.Join(dir, name+".log"),
			args: []string{"--config", cfg, "--db", dsn, "--data-dir", filepath.Join(dir, "data-"+name)}}
		r.start()
		t.Cleanup(r.stop)
		rs = append(rs, r)
	}
	return rs
}

// blockingTarget is the tool's loopback server: each request counts, and
// the first of each run blocks until its client goes away (entered says
// it came).
type blockingTarget struct {
	hits    atomic.Int32
	entered chan struct{}
}

func (b *blockingTarget) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b.hits.Add(1)
	select {
	case b.entered <- struct{}{}:
	default:
	}
	<-r.Context().Done()
}

// pauseBackground submits a background run of "hitl" through r and waits
// until it is PAUSED with its job paused; it returns the run id and the
// continue form confirming its tool call.
func pauseBackground(t *testing.T, r *replica) (string, url.Values) {
	t.Helper()
	res, err := http.PostForm("http://"+r.addr+"/agents/hitl/runs", url.Values{"message": {"fetch it"}, "background": {"true"}})
	if err != nil {
		t.Fatal(err)
	}
	var acc struct {
		RunID string `json:"run_id"`
	}
	json.NewDecoder(res.Body).Decode(&acc)
	res.Body.Close()
	if res.StatusCode != http.StatusAccepted || acc.RunID == "" {
		t.Fatalf("background run: %d %+v", res.StatusCode, acc)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		_, v := getStatus(t, "http://"+r.addr+"/agents/hitl/runs/"+acc.RunID)
		_, job := getStatus(t, "http://"+r.addr+"/queue/jobs/"+acc.RunID)
		if v["status"] == "PAUSED" && job["status"] == "paused" {
			reqs, _ := v["requirements"].([]any)
			if len(reqs) != 1 {
				t.Fatalf("paused run's requirements %v", v["requirements"])
			}
			id, _ := reqs[0].(map[string]any)["id"].(string)
			return acc.RunID, url.Values{"stream": {"false"},
				"tools": {`[{"tool_call_id":"` + id + `","tool_name":"http_request","requires_confirmation":true,"confirmed":true}]`}}
		}
		if time.Now().After(deadline) {
			t.Fatalf("run %s is %v, its job %v", acc.RunID, v["status"], job["status"])
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// continueUntilToolRuns continues runID through r in the background and
// waits until its tool reached the target.
func continueUntilToolRuns(t *testing.T, r *replica, target *blockingTarget, runID string, form url.Values) chan string {
	t.Helper()
	ended := make(chan string, 1)
	go func() {
		// The worker that paused the run may not have let go of it yet (its
		// job is paused with the run's final save; the worker returns after):
		// the continue waits for that.
		res, err := http.PostForm("http://"+r.addr+"/agents/hitl/runs/"+runID+"/continue", form)
		if err != nil {
			ended <- err.Error()
			return
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		ended <- fmt.Sprint(res.StatusCode, " ", string(body))
	}()
	select {
	case <-target.entered:
	case answer := <-ended:
		t.Fatalf("the continue through %s ended (%s) before its tool ran", r.name, answer)
	case <-time.After(60 * time.Second):
		t.Fatalf("the continue through %s did not reach its tool", r.name)
	}
	return ended
}

// Two replicas on one Postgres; a paused background run continued through
// replica A, its confirmed tool under way:
//   - a continue through B is 409 (it ran the tool a second time beside
//     A's: the continue held nothing that B could see);
//   - a cancel through B stops A's continue and answers 200 CANCELLED once
//     the run is stored so (B cancelled the still-paused job and answered
//     200 while A's continue went on to store the run COMPLETED);
//   - A killed mid-continue: B marks the run ERROR once A's lease expires
//     (it stayed RUNNING for good, its job paused).
func TestContinueLease_PausedRunContinuedAcrossReplicas(t *testing.T) {
	target := &blockingTarget{entered: make(chan struct{}, 1)}
	srv := &http.Server{Handler: target}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	rs := pausedRunReplicas(t, "http://"+ln.Addr().String()+"/block")
	a, b := rs[0], rs[1]

	runID, confirm := pauseBackground(t, a)
	ended := continueUntilToolRuns(t, a, target, runID, confirm)
	if _, job := getStatus(t, "http://"+b.addr+"/queue/jobs/"+runID); job["status"] != "running" {
		t.Errorf("the job while A continues its run: %v", job)
	}
	res, err := http.PostForm("http://"+b.addr+"/agents/hitl/runs/"+runID+"/continue", confirm)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusConflict {
		t.Errorf("a second continue through B while A's runs: %d %s", res.StatusCode, body)
	}
	res, err = http.Post("http://"+b.addr+"/agents/hitl/runs/"+runID+"/cancel", "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK || !strings.Contains(string(body), `"CANCELLED"`) {
		t.Errorf("cancel through B: %d %s", res.StatusCode, body)
	}
	select {
	case <-ended:
	case <-time.After(60 * time.Second):
		t.Fatal("the continue through A did not end after the cancel")
	}
	time.Sleep(500 * time.Millisecond) // a late write of A's would land by now
	if _, v := getStatus(t, "http://"+b.addr+"/agents/hitl/runs/"+runID); v["status"] != "CANCELLED" {
		t.Errorf("run %v after the cancel through B", v["status"])
	}
	if _, job := getStatus(t, "http://"+b.addr+"/queue/jobs/"+runID); job["status"] != "cancelled" {
		t.Errorf("the job after the cancel: %v", job["status"])
	}
	if n := target.hits.Load(); n != 1 {
		t.Errorf("the confirmed tool reached its target %d times, want once", n)
	}

	runID, confirm = pauseBackground(t, a)
	continueUntilToolRuns(t, a, target, runID, confirm)
	a.kill()
	killed := time.Now()
	for {
		_, v := getStatus(t, "http://"+b.addr+"/agents/hitl/runs/"+runID)
		if v["status"] == "ERROR" {
			t.Logf("continued run marked ERROR %s after SIGKILL (lock_grace %ds)", time.Since(killed).Round(10*time.Millisecond), leaseGrace)
			break
		}
		if v["status"] != "RUNNING" && v["status"] != "PAUSED" {
			// PAUSED: an agent's continue stores the run at its end.
			t.Fatalf("the killed replica's continued run became %v", v["status"])
		}
		if time.Since(killed) > 30*time.Second {
			t.Fatalf("the killed replica's continued run still RUNNING %s after the kill", time.Since(killed))
		}
		time.Sleep(100 * time.Millisecond)
	}
	if _, job := getStatus(t, "http://"+b.addr+"/queue/jobs/"+runID); job["status"] != "failed" {
		t.Errorf("the killed continue's job: %v", job)
	}
}
