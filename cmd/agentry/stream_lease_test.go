package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// leaseGrace is the replicas' lock_grace in these tests (seconds).
const leaseGrace = 3

// streamReplicas starts two `agentry serve` replicas on one fresh Postgres
// database, serving agent "slow" (a scripted model streaming 60 words, one
// every 150 ms: about 9 s, three times lock_grace) and a workflow "slowflow"
// whose one step is that agent, with the durable queue.
func streamReplicas(t *testing.T) []*replica {
	t.Helper()
	bin, err := agentryBinary()
	if err != nil {
		t.Fatal(err)
	}
	dsn := chaosPostgres(t)
	dir := t.TempDir()
	var words strings.Builder
	for i := range 60 {
		fmt.Fprintf(&words, "w%d ", i)
	}
	script := filepath.Join(dir, "slow.yaml")
	if err := os.WriteFile(script, []byte("chunk_latency: 150ms\nturns:\n  - content: \""+strings.TrimSpace(words.String())+"\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var rs []*replica
	for _, name := range []string{"a", "b"} {
		cfg := filepath.Join(dir, name+".yaml")
		if err := os.WriteFile(cfg, []byte(fmt.Sprintf(`agents:
  - id: slow
    model: scripted:%s
workflows:
  - id: slowflow
    steps:
      - name: talk
        agent: slow
queue:
  durable: true
  lock_grace_seconds: %d
  poll_interval: 0.2
  deployment_id: %s
`, script, leaseGrace, name)), 0o644); err != nil {
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

// frame is one SSE frame.
type frame struct{ id, event, data string }

// sseReader reads frames of a streamed response.
type sseReader struct {
	res *http.Response
	r   *bufio.Reader
}

func postStream(t *testing.T, u string, form url.Values, hdr map[string]string) *sseReader {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, u, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCode != 200 {
		var b strings.Builder
		bufio.NewReader(res.Body).WriteTo(&b)
		res.Body.Close()
		t.Fatalf("POST %s: %d %s", u, res.StatusCode, b.String())
	}
	t.Cleanup(func() { res.Body.Close() })
	return &sseReader{res: res, r: bufio.NewReader(res.Body)}
}

// next returns the next frame; ok is false when the stream ended (or broke).
func (s *sseReader) next() (f frame, ok bool) {
	got := false
	for {
		line, err := s.r.ReadString('\n')
		if err != nil {
			return f, false
		}
		line = strings.TrimSuffix(line, "\n")
		switch {
		case line == "":
			if got {
				return f, true
			}
		case strings.HasPrefix(line, "id: "):
			f.id, got = line[4:], true
		case strings.HasPrefix(line, "event: "):
			f.event, got = line[7:], true
		case strings.HasPrefix(line, "data: "):
			f.data, got = line[6:], true
		}
	}
}

// until reads frames until one named name (returned with those before it).
func (s *sseReader) until(t *testing.T, name string) []frame {
	t.Helper()
	var fs []frame
	for {
		f, ok := s.next()
		if !ok {
			t.Fatalf("stream ended before %s; got %+v", name, fs)
		}
		fs = append(fs, f)
		if f.event == name {
			return fs
		}
	}
}

func runIDOf(t *testing.T, fs []frame) string {
	t.Helper()
	for _, f := range fs {
		var ev struct {
			RunID string `json:"run_id"`
		}
		if json.Unmarshal([]byte(f.data), &ev) == nil && ev.RunID != "" {
			return ev.RunID
		}
	}
	t.Fatalf("no run_id in %+v", fs)
	return ""
}

func getStatus(t *testing.T, u string) (int, map[string]any) {
	t.Helper()
	res, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var v map[string]any
	json.NewDecoder(res.Body).Decode(&v)
	return res.StatusCode, v
}

// A streamed (foreground) workflow run whose replica is killed with
// SIGKILL is marked ERROR by the other replica once its lease expires; a
// slow stream on the live replica, three times longer than lock_grace, is
// never marked and completes.
func TestStreamLease_KilledReplicasStreamIsMarkedErrorByTheOther(t *testing.T) {
	rs := streamReplicas(t)
	a, b := rs[0], rs[1]
	doomed := postStream(t, "http://"+a.addr+"/workflows/slowflow/runs", url.Values{"message": {"go"}, "stream": {"true"}}, nil)
	doomedID := runIDOf(t, doomed.until(t, "RunContent"))
	alive := postStream(t, "http://"+b.addr+"/workflows/slowflow/runs", url.Values{"message": {"go"}, "stream": {"true"}}, nil)
	aliveID := runIDOf(t, alive.until(t, "RunContent"))
	if code, v := getStatus(t, "http://"+b.addr+"/workflows/slowflow/runs/"+doomedID); code != 200 || v["status"] != "RUNNING" {
		t.Fatalf("before the kill the streamed run is %d %v", code, v["status"])
	}
	a.kill()
	killed := time.Now()
	var marked time.Duration
	for {
		_, v := getStatus(t, "http://"+b.addr+"/workflows/slowflow/runs/"+doomedID)
		if v["status"] == "ERROR" {
			marked = time.Since(killed)
			if c, _ := v["content"].(string); !strings.Contains(c, "streamed run") {
				t.Errorf("ERROR run says %q", c)
			}
			break
		}
		if v["status"] != "RUNNING" {
			t.Fatalf("killed run became %v", v["status"])
		}
		if time.Since(killed) > 30*time.Second {
			t.Fatalf("killed replica's streamed run still RUNNING %s after the kill", time.Since(killed))
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("streamed run marked ERROR %s after SIGKILL (lock_grace %ds)", marked.Round(10*time.Millisecond), leaseGrace)
	if marked < leaseGrace*time.Second-time.Second {
		t.Errorf("marked after %s: before its lease could expire", marked)
	}
	if code, job := getStatus(t, "http://"+b.addr+"/queue/jobs/"+doomedID); code != 200 || job["status"] != "failed" || job["job_type"] != "foreground" {
		t.Errorf("lease row of the killed run: %d %v", code, job)
	}
	// The slow stream on the live replica goes on to its end.
	alive.until(t, "WorkflowCompleted")
	if _, v := getStatus(t, "http://"+b.addr+"/workflows/slowflow/runs/"+aliveID); v["status"] != "COMPLETED" {
		t.Fatalf("the slow live stream ended %v", v["status"])
	}
}

// A durable background run streamed from replica A is cut by a SIGKILL of
// A; B takes the job over after lock_grace and the client, resuming on B
// with Last-Event-ID, gets the events after that id with no gap and no
// duplicate id: the rest of attempt 1 that was stored, then attempt 2's
// (which starts again with RunStarted), then RunCompleted.
func TestStreamLease_BackgroundStreamResumesOnTheOtherReplicaAfterSIGKILL(t *testing.T) {
	rs := streamReplicas(t)
	a, b := rs[0], rs[1]
	// Submitted to A; the stream is served by A whichever replica runs it.
	s := postStream(t, "http://"+a.addr+"/agents/slow/runs", url.Values{"message": {"go"}, "background": {"true"}, "stream": {"true"}}, nil)
	var got []frame
	for len(got) < 6 {
		f, ok := s.next()
		if !ok {
			t.Fatalf("stream ended early: %+v", got)
		}
		if f.id != "" {
			got = append(got, f)
		}
	}
	runID := runIDOf(t, got)
	// Kill the replica that holds the job (its node id starts with its
	// deployment_id), and resume on the other.
	_, job := getStatus(t, "http://"+a.addr+"/queue/jobs/"+runID)
	victim, other := a, b
	if by, _ := job["locked_by"].(string); strings.HasPrefix(by, "b-") {
		victim, other = b, a
	} else if !strings.HasPrefix(by, "a-") {
		t.Fatalf("job of the streamed run: %v", job)
	}
	victim.kill()
	s.res.Body.Close()
	last := got[len(got)-1].id
	// Resume on the other replica from the last id received.
	r := postStream(t, "http://"+other.addr+"/agents/slow/runs/"+runID+"/resume", url.Values{"last_event_index": {last}}, map[string]string{"Last-Event-ID": last})
	next, _ := strconv.Atoi(last)
	next++
	starts := 0
	for {
		f, ok := r.next()
		if !ok {
			t.Fatalf("resumed stream ended without RunCompleted after id %d", next-1)
		}
		if f.id == "" {
			continue
		}
		if f.id != strconv.Itoa(next) {
			t.Fatalf("resumed stream: id %s after %d", f.id, next-1)
		}
		next++
		if f.event == "RunStarted" {
			starts++
		}
		if f.event == "RunCompleted" {
			break
		}
	}
	// The job is recorded final a moment after its run's last event.
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		_, job = getStatus(t, "http://"+other.addr+"/queue/jobs/"+runID)
		if job["status"] == "completed" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("job after the takeover: %v", job)
		}
	}
	if att, _ := job["attempt"].(float64); att != 2 || starts != 1 {
		t.Errorf("after the takeover: attempt %v, %d RunStarted in the resumed stream (want attempt 2 starting once)", job["attempt"], starts)
	}
}
