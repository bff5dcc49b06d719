package agentos

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/dbtest"
	"github.com/agentryhq/agentry/db/sqlite"
	"github.com/agentryhq/agentry/model/scripted"
	"github.com/agentryhq/agentry/run"
)

// benchServer serves one scripted agent, storing on SQLite when withDB.
func benchServer(b *testing.B, withDB bool) string {
	b.Helper()
	var d *db.DB
	if withDB {
		var err error
		d, err = sqlite.Open(context.Background(), sqlite.Config{Path: filepath.Join(b.TempDir(), "bench.db")})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = d.Close() })
	}
	a, err := agent.New(agent.Config{ID: "bench", Model: scripted.Reply("Hello from the benchmark agent."), DB: d})
	if err != nil {
		b.Fatal(err)
	}
	s, err := New(Config{Agents: []*agent.Agent{a}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		b.Fatal(err)
	}
	ts := httptest.NewServer(s.Handler())
	b.Cleanup(ts.Close)
	return ts.URL + "/agents/bench/runs"
}

// BenchmarkCreateRun measures POST /agents/{id}/runs end to end over loopback
// (client included), without storage (the HTTP path and agent loop) and on
// SQLite (two write transactions per run).
func BenchmarkCreateRun(b *testing.B) {
	for _, bc := range []struct {
		name   string
		withDB bool
		body   string
	}{
		{"json/nodb", false, "message=hello&stream=false"},
		{"json/sqlite", true, "message=hello&stream=false"},
		{"sse/nodb", false, "message=hello"},
		{"sse/sqlite", true, "message=hello"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			u := benchServer(b, bc.withDB)
			client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
			b.ReportAllocs()
			b.SetParallelism(16)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					req, _ := http.NewRequest(http.MethodPost, u, strings.NewReader(bc.body))
					req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
					res, err := client.Do(req)
					if err != nil {
						b.Error(err)
						return
					}
					if res.StatusCode != 200 {
						b.Errorf("status %d", res.StatusCode)
					}
					_, _ = io.Copy(io.Discard, bufio.NewReader(res.Body))
					res.Body.Close()
				}
			})
		})
	}
}

// BenchmarkListSessions measures GET /sessions over loopback on SQLite with
// 100 sessions of 40 runs (~2 KB each): sessions with a stored session_name,
// and sessions whose names are derived from their first runs (one extra
// query per page).
func BenchmarkListSessions(b *testing.B) {
	for _, named := range []bool{true, false} {
		name := "derived"
		if named {
			name = "stored"
		}
		b.Run(name, func(b *testing.B) {
			ctx := context.Background()
			d, err := sqlite.Open(ctx, sqlite.Config{Path: filepath.Join(b.TempDir(), "bench.db")})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = d.Close() })
			for i := range 100 {
				sid := fmt.Sprintf("s-%03d", i)
				sess := &db.Session{SessionID: sid, SessionType: run.TypeAgent, AgentID: "bench"}
				if named {
					sess.SessionData = json.RawMessage(`{"session_name":"chat ` + sid + `"}`)
				}
				if _, err := d.UpsertSession(ctx, sess); err != nil {
					b.Fatal(err)
				}
				for _, r := range dbtest.BenchRuns(sid, 40) {
					r.RunID = sid + "-" + r.RunID
					if _, err := d.UpsertRun(ctx, r); err != nil {
						b.Fatal(err)
					}
				}
			}
			a, err := agent.New(agent.Config{ID: "bench", Model: scripted.Reply("x"), DB: d})
			if err != nil {
				b.Fatal(err)
			}
			s, err := New(Config{Agents: []*agent.Agent{a}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
			if err != nil {
				b.Fatal(err)
			}
			ts := httptest.NewServer(s.Handler())
			b.Cleanup(ts.Close)
			for _, limit := range []int{20, 100} {
				b.Run(fmt.Sprintf("limit=%d", limit), func(b *testing.B) {
					u := fmt.Sprintf("%s/sessions?limit=%d", ts.URL, limit)
					b.ReportAllocs()
					for b.Loop() {
						res, err := http.Get(u)
						if err != nil {
							b.Fatal(err)
						}
						body, _ := io.ReadAll(res.Body)
						res.Body.Close()
						if res.StatusCode != 200 || !strings.Contains(string(body), `"session_name":"`+map[bool]string{true: "chat ", false: "run-000000 message 0"}[named]) {
							b.Fatalf("status %d %.200s", res.StatusCode, body)
						}
					}
				})
			}
		})
	}
}
