package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// chaosWorld is what the chaos test's agents talk to, in the test process:
// a model server in OpenAI's Chat Completions wire format and an MCP server
// whose "record" tool records each side effect in a table of its own
// database. It logs every model request and tool call per job (in arrival
// order) and the peak of calls in flight per replica.
type chaosWorld struct {
	srv     *httptest.Server
	effects *sql.DB

	mu       sync.Mutex
	phases   map[string][]int // job → phases seen: 0 first model call, 1 tool call, 2 second model call
	inFlight map[string]int   // replica process → calls in flight
	peak     map[string]int
	// life counts a replica's processes: calls are counted per process
	// ("solo#3"), since a killed process's calls can still be running in
	// this server (the tool's handler does not stop with its client) when
	// the next process of the replica starts its own.
	life map[string]int
}

func newChaosWorld(t *testing.T, effectsPath string) *chaosWorld {
	t.Helper()
	eff, err := sql.Open("sqlite", "file:"+effectsPath+"?_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)")
	if err != nil {
		t.Fatal(err)
	}
	eff.SetMaxOpenConns(1)
	t.Cleanup(func() { eff.Close() })
	if _, err := eff.Exec(`CREATE TABLE side_effects (seq INTEGER PRIMARY KEY AUTOINCREMENT, job TEXT NOT NULL, idempotency_key TEXT)`); err != nil {
		t.Fatal(err)
	}
	w := &chaosWorld{effects: eff, phases: map[string][]int{}, inFlight: map[string]int{}, peak: map[string]int{}, life: map[string]int{}}
	ms := mcp.NewServer(&mcp.Implementation{Name: "effects", Version: "1"}, nil)
	type recordIn struct {
		Job string `json:"job"`
	}
	mcp.AddTool(ms, &mcp.Tool{Name: "record", Description: "Records a side effect of a job."}, func(ctx context.Context, req *mcp.CallToolRequest, in recordIn) (*mcp.CallToolResult, any, error) {
		replica := ""
		if req.Extra != nil && req.Extra.Header != nil {
			replica = req.Extra.Header.Get("X-Replica")
		}
		done := w.enter(replica, in.Job, 1)
		defer done()
		time.Sleep(20 * time.Millisecond)
		if _, err := eff.ExecContext(context.WithoutCancel(ctx), `INSERT INTO side_effects (job) VALUES (?)`, in.Job); err != nil {
			return nil, nil, err
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "recorded " + in.Job}}}, nil, nil
	})
	mux := http.NewServeMux()
	mux.Handle("/mcp", mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return ms }, nil))
	mux.HandleFunc("POST /v1/chat/completions", w.chat)
	w.srv = httptest.NewServer(mux)
	t.Cleanup(w.srv.Close)
	return w
}

// enter counts a call of job in phase on replica's current process; the
// returned func ends it.
func (w *chaosWorld) enter(replica, job string, phase int) func() {
	w.mu.Lock()
	proc := fmt.Sprintf("%s#%d", replica, w.life[replica])
	w.phases[job] = append(w.phases[job], phase)
	w.inFlight[proc]++
	w.peak[proc] = max(w.peak[proc], w.inFlight[proc])
	w.mu.Unlock()
	return func() {
		w.mu.Lock()
		w.inFlight[proc]--
		w.mu.Unlock()
	}
}

// restarted says replica's process was killed (it has exited) and the next
// one is about to start: calls entering from now on are the next one's.
func (w *chaosWorld) restarted(replica string) {
	w.mu.Lock()
	w.life[replica]++
	w.mu.Unlock()
}

// chat answers a job's first model call with a call of record and its
// second (after the tool result) with "done <job>".
func (w *chaosWorld) chat(rw http.ResponseWriter, r *http.Request) {
	var req struct {
		Stream   bool `json:"stream"`
		Messages []struct {
			Role    string `json:"role"`
			Content any    `json:"content"`
		} `json:"messages"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(rw, err.Error(), http.StatusBadRequest)
		return
	}
	job, tools := "", 0
	for _, m := range req.Messages {
		switch m.Role {
		case "user":
			if s, ok := m.Content.(string); ok {
				job = strings.TrimSpace(s)
			} else {
				b, _ := json.Marshal(m.Content)
				if i := strings.Index(string(b), "job-"); i >= 0 {
					job = strings.Trim(strings.Fields(string(b)[i:])[0], `"]}`)
				}
			}
		case "tool":
			tools++
		}
	}
	phase := 0
	if tools > 0 {
		phase = 2
	}
	done := w.enter(r.Header.Get("X-Replica"), job, phase)
	defer done()
	select {
	case <-time.After(20 * time.Millisecond):
	case <-r.Context().Done():
		return
	}
	id := "chatcmpl-" + job
	if !req.Stream {
		msg := fmt.Sprintf(`{"role":"assistant","content":%q}`, "done "+job)
		finish := "stop"
		if phase == 0 {
			args, _ := json.Marshal(fmt.Sprintf(`{"job":%q}`, job))
			msg = `{"role":"assistant","content":null,"tool_calls":[{"id":"call_` + job + `","type":"function","function":{"name":"record","arguments":` + string(args) + `}}]}`
			finish = "tool_calls"
		}
		rw.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(rw, `{"id":%q,"object":"chat.completion","created":1,"model":"chaos","choices":[{"index":0,"message":%s,"finish_reason":%q}],"usage":{"prompt_tokens":5,"completion_tokens":5,"total_tokens":10}}`, id, msg, finish)
		return
	}
	rw.Header().Set("Content-Type", "text/event-stream")
	var b bytes.Buffer
	chunk := func(delta, finish string) {
		f := "null"
		if finish != "" {
			f = `"` + finish + `"`
		}
		fmt.Fprintf(&b, "data: {\"id\":%q,\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"chaos\",\"choices\":[{\"index\":0,\"delta\":%s,\"finish_reason\":%s}]}\n\n", id, delta, f)
	}
	chunk(`{"role":"assistant","content":""}`, "")
	if phase == 0 {
		args, _ := json.Marshal(fmt.Sprintf(`{"job":%q}`, job))
		chunk(`{"tool_calls":[{"index":0,"id":"call_`+job+`","type":"function","function":{"name":"record","arguments":`+string(args)+`}}]}`, "")
		chunk(`{}`, "tool_calls")
	} else {
		content, _ := json.Marshal("done " + job)
		chunk(`{"content":`+string(content)+`}`, "")
		chunk(`{}`, "stop")
	}
	fmt.Fprintf(&b, "data: {\"id\":%q,\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"chaos\",\"choices\":[],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":5,\"total_tokens\":10}}\n\ndata: [DONE]\n\n", id)
	rw.Write(b.Bytes())
}

// sideEffects counts the recorded side effects per job.
func (w *chaosWorld) sideEffects(t *testing.T) map[string]int {
	t.Helper()
	rows, err := w.effects.Query(`SELECT job, COUNT(*) FROM side_effects GROUP BY job`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var job string
		var n int
		if err := rows.Scan(&job, &n); err != nil {
			t.Fatal(err)
		}
		out[job] = n
	}
	return out
}

// checkReplays fails for every job whose calls went back to an earlier
// phase: a step is recorded in the journal before the run moves on, so a
// later phase proves the earlier ones recorded, and a recorded step must be
// replayed, never called again.
func (w *chaosWorld) checkReplays(t *testing.T) {
	t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	bad := 0
	for job, ph := range w.phases {
		for i := 1; i < len(ph); i++ {
			if ph[i] < ph[i-1] {
				if bad < 10 {
					t.Errorf("%s: calls in phases %v: a recorded step was executed again (0 first model call, 1 tool, 2 second model call)", job, ph)
				}
				bad++
				break
			}
		}
	}
	if bad > 0 {
		t.Errorf("%d jobs repeated a recorded model call or tool call", bad)
	}
}

func (w *chaosWorld) peaks() map[string]int {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := map[string]int{}
	for k, v := range w.peak {
		out[k] = v
	}
	return out
}
