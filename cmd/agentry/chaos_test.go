package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// agentryBinary builds the agentry binary once per test binary run.
var agentryBinary = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "agentry-chaos-bin-")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "agentry")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build: %v\n%s", err, out)
	}
	return bin, nil
})

// chaosRuns and chaosKills are the chaos test's size: runs submitted and
// SIGKILLs at least.
const (
	chaosRuns        = 200
	chaosKills       = 10
	chaosConcurrency = 4
)

// replica is one `agentry serve` child process, restarted after each kill.
type replica struct {
	t        *testing.T
	name     string
	bin      string
	args     []string
	addr     string
	logPath  string
	mu       sync.Mutex
	cmd      *exec.Cmd
	exited   chan struct{}
	restarts int
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func (r *replica) start() {
	r.t.Helper()
	logf, err := os.OpenFile(r.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		r.t.Fatal(err)
	}
	fmt.Fprintf(logf, "=== start %d\n", r.restarts)
	host, port, _ := net.SplitHostPort(r.addr)
	cmd := exec.Command(r.bin, append([]string{"serve", "--host", host, "--port", port, "--log-level", "warn"}, r.args...)...)
	cmd.Env = append(os.Environ(), "OPENAI_API_KEY=chaos")
	cmd.Stdout, cmd.Stderr = logf, logf
	dieWithParent(cmd)
	if err := cmd.Start(); err != nil {
		r.t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); logf.Close(); close(exited) }()
	r.mu.Lock()
	r.cmd, r.exited = cmd, exited
	r.restarts++
	r.mu.Unlock()
	deadline := time.Now().Add(60 * time.Second)
	for {
		res, err := http.Get("http://" + r.addr + "/health")
		if err == nil {
			res.Body.Close()
			if res.StatusCode == 200 {
				return
			}
		}
		select {
		case <-exited:
			logs, _ := os.ReadFile(r.logPath)
			r.t.Fatalf("%s exited at start:\n%s", r.name, tail(string(logs), 3000))
		default:
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("%s not healthy within 60s", r.name)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (r *replica) kill() {
	r.mu.Lock()
	cmd, exited := r.cmd, r.exited
	r.mu.Unlock()
	cmd.Process.Signal(syscall.SIGKILL)
	<-exited
}

func (r *replica) stop() {
	r.mu.Lock()
	cmd, exited := r.cmd, r.exited
	r.mu.Unlock()
	if cmd == nil {
		return
	}
	cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(30 * time.Second):
		r.kill()
	}
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// chaosConfig writes the serve config of one replica.
func chaosConfig(t *testing.T, dir, name, worldURL string, lockGrace float64) string {
	t.Helper()
	cfg := fmt.Sprintf(`agents:
  - id: chaos
    name: Chaos
    model:
      id: chaos-model
      provider: openai
      base_url: %[1]s/v1
      extra_headers: {X-Replica: %[2]s}
    mcp:
      - name: effects
        url: %[1]s/mcp
        headers: {X-Replica: %[2]s}
offload_tool_results: false
queue:
  durable: true
  max_concurrency: %[3]d
  max_attempts: 1000
  retry_delay_seconds: 0.1
  lock_grace_seconds: %[4]g
  poll_interval: 0.1
`, worldURL, name, chaosConcurrency, lockGrace)
	p := filepath.Join(dir, name+".yaml")
	if err := os.WriteFile(p, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// submitAll posts chaosRuns background runs, each with its job name as
// message and Idempotency-Key, retrying through kills (the key makes a
// retried submission the same run). It returns job → run id.
func submitAll(t *testing.T, replicas []*replica) map[string]string {
	ids := map[string]string{}
	client := &http.Client{Timeout: 10 * time.Second}
	for i := range chaosRuns {
		job := fmt.Sprintf("job-%03d", i)
		for try := 0; ; try++ {
			r := replicas[(i+try)%len(replicas)]
			req, _ := http.NewRequest(http.MethodPost, "http://"+r.addr+"/agents/chaos/runs",
				strings.NewReader("message="+job+"&background=true&user_id=chaos"))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			req.Header.Set("Idempotency-Key", job)
			res, err := client.Do(req)
			if err == nil {
				var acc struct {
					RunID string `json:"run_id"`
				}
				json.NewDecoder(res.Body).Decode(&acc)
				res.Body.Close()
				if res.StatusCode == http.StatusAccepted && acc.RunID != "" {
					ids[job] = acc.RunID
					break
				}
			}
			if try > 2000 {
				t.Fatalf("could not submit %s: %v", job, err)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	return ids
}

// killLoop kills a replica (one at a time, in turn) at random moments and
// restarts it, at least chaosKills times and until submitting is done.
func killLoop(t *testing.T, world *chaosWorld, replicas []*replica, submitted <-chan struct{}, rng *rand.Rand) int {
	kills := 0
	done := false
	for kills < chaosKills || !done {
		time.Sleep(time.Duration(150+rng.IntN(600)) * time.Millisecond)
		r := replicas[kills%len(replicas)]
		r.kill()
		kills++
		world.restarted(r.name)
		r.start()
		select {
		case <-submitted:
			done = true
		default:
		}
	}
	return kills
}

// runStatusOf reads a run's status through a replica ("" while unreachable).
func runStatusOf(addr, runID string) string {
	res, err := http.Get("http://" + addr + "/agents/chaos/runs/" + runID + "?user_id=chaos")
	if err != nil {
		return ""
	}
	defer res.Body.Close()
	var out struct {
		Status string `json:"status"`
	}
	json.NewDecoder(res.Body).Decode(&out)
	return out.Status
}

// runChaos submits, kills and restarts, waits for every run and checks the
// guarantees of the durable queue and the step journal.
func runChaos(t *testing.T, world *chaosWorld, replicas []*replica) {
	for _, r := range replicas {
		r.start()
	}
	t.Cleanup(func() {
		for _, r := range replicas {
			r.stop()
		}
	})
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 9))
	submitted := make(chan struct{})
	var ids map[string]string
	go func() {
		defer close(submitted)
		ids = submitAll(t, replicas)
	}()
	kills := killLoop(t, world, replicas, submitted, rng)
	<-submitted
	// Every run ends COMPLETED: bounded wait, no timing assertion.
	deadline := time.Now().Add(3 * time.Minute)
	pending := map[string]string{}
	for job, id := range ids {
		pending[job] = id
	}
	for len(pending) > 0 {
		for job, id := range pending {
			switch st := runStatusOf(replicas[0].addr, id); st {
			case "COMPLETED":
				delete(pending, job)
			case "ERROR", "CANCELLED":
				t.Fatalf("%s (run %s) ended %s", job, id, st)
			}
		}
		if time.Now().After(deadline) {
			var jobs []string
			for _, id := range pending {
				if res, err := http.Get("http://" + replicas[0].addr + "/queue/jobs/" + id); err == nil {
					b, _ := io.ReadAll(res.Body)
					res.Body.Close()
					jobs = append(jobs, string(b))
				}
			}
			logs, _ := os.ReadFile(replicas[0].logPath)
			t.Fatalf("%d runs not COMPLETED after 3 minutes:\n%s\n%s", len(pending), strings.Join(jobs, "\n"), tail(string(logs), 4000))
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("%d runs COMPLETED through %d SIGKILLs", len(ids), kills)
	if kills < chaosKills {
		t.Fatalf("only %d kills", kills)
	}
	// One run per submission (idempotency keys), each COMPLETED once.
	seen := map[string]bool{}
	for job, id := range ids {
		if seen[id] {
			t.Errorf("%s shares run %s with another job", job, id)
		}
		seen[id] = true
	}
	// Concurrency never above max_concurrency in any replica's process.
	for name, p := range world.peaks() {
		if p > chaosConcurrency {
			t.Errorf("replica process %s had %d calls in flight, max_concurrency is %d", name, p, chaosConcurrency)
		}
	}
	// Every job's side effect happened; none was executed again once its
	// step was recorded, and no model call of a recorded step was repeated.
	effects := world.sideEffects(t)
	again := 0
	for job := range ids {
		switch n := effects[job]; {
		case n == 0:
			t.Errorf("%s completed without its side effect", job)
		case n > 1:
			again++
		}
	}
	t.Logf("%d jobs re-executed a tool call whose result was not recorded yet when their process was killed", again)
	world.checkReplays(t)
}

// TestChaos_SQLiteSingleNodeSurvivesSIGKILLs runs 200 background runs on
// `agentry serve` over SQLite and kills it with SIGKILL at random moments at
// least 10 times, restarting it each time.
func TestChaos_SQLiteSingleNodeSurvivesSIGKILLs(t *testing.T) {
	bin, err := agentryBinary()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	world := newChaosWorld(t, filepath.Join(dir, "effects.db"))
	cfg := chaosConfig(t, dir, "solo", world.srv.URL, 5)
	r := &replica{t: t, name: "solo", bin: bin, addr: freeAddr(t), logPath: filepath.Join(dir, "solo.log"),
		args: []string{"--config", cfg, "--db", filepath.Join(dir, "agentry.db"), "--data-dir", filepath.Join(dir, "data")}}
	runChaos(t, world, []*replica{r})
}

// TestChaos_PostgresTwoReplicasSurviveSIGKILLs runs the same on two
// replicas sharing one Postgres database, killing one at a time; the other
// (or the restarted one) takes its runs over after lock_grace (5 s).
func TestChaos_PostgresTwoReplicasSurviveSIGKILLs(t *testing.T) {
	bin, err := agentryBinary()
	if err != nil {
		t.Fatal(err)
	}
	dsn := chaosPostgres(t)
	dir := t.TempDir()
	world := newChaosWorld(t, filepath.Join(dir, "effects.db"))
	var replicas []*replica
	for _, name := range []string{"a", "b"} {
		cfg := chaosConfig(t, dir, name, world.srv.URL, 5)
		replicas = append(replicas, &replica{t: t, name: name, bin: bin, addr: freeAddr(t), logPath: filepath.Join(dir, name+".log"),
			args: []string{"--config", cfg, "--db", dsn, "--data-dir", filepath.Join(dir, "data-"+name)}})
	}
	runChaos(t, world, replicas)
}

// chaosPostgres creates a fresh database on the loopback server and drops
// it after the test.
func chaosPostgres(t *testing.T) string {
	t.Helper()
	base := os.Getenv("AGENTRY_TEST_POSTGRES_DSN")
	if base == "" {
		base = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"
	}
	admin, err := sql.Open("pgx", base)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Close() })
	name := fmt.Sprintf("agentry_chaos_%d", time.Now().UnixNano())
	if _, err := admin.ExecContext(context.Background(), "CREATE DATABASE "+name); err != nil {
		t.Fatalf("postgres test server unavailable: %v", err)
	}
	t.Cleanup(func() {
		admin.ExecContext(context.Background(), "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
	})
	return strings.Replace(base, "/test?", "/"+name+"?", 1)
}
