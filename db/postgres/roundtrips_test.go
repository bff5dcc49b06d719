package postgres_test

import (
	"bytes"
	"encoding/json"
	"net"
	"net/url"
	"sync"
	"testing"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/postgres"
	"github.com/agentryhq/agentry/run"
)

// A run write is one round trip to the server once its statements are
// prepared: the run alone (advisory lock and upsert) and the run with its
// session (lock, session upsert, run upsert), each sent as one implicit
// transaction. Counted on the wire by a proxy.
func TestSaveRun_OneRoundTrip(t *testing.T) {
	t.Parallel()
	d, trips := openCounted(t)
	alice := db.WithUserScope(ctx, "alice")
	sess := func(name string) *db.Session {
		return &db.Session{SessionID: "s", SessionType: run.TypeAgent, SessionData: json.RawMessage(`{"session_name":"` + name + `"}`)}
	}
	newRun := func(id string) *db.Run {
		return &db.Run{RunID: id, SessionID: "s", RunType: run.TypeAgent, Status: run.StatusCompleted, RunData: []byte(`{"run_id":"` + id + `"}`)}
	}
	// Prepares every statement (pgx caches them per connection; the pool
	// has one).
	for i, s := range []*db.Session{sess("a"), nil} {
		if _, _, err := d.SaveRun(alice, s, newRun("warm"+string(rune('0'+i)))); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		name string
		sess *db.Session
		run  string
	}{
		{"session and run", sess("b"), "r1"},
		{"run alone", nil, "r2"},
	} {
		trips.reset()
		if _, _, err := d.SaveRun(alice, c.sess, newRun(c.run)); err != nil {
			t.Fatal(err)
		}
		if n := trips.count(); n != 1 {
			t.Errorf("%s: %d round trips, want 1", c.name, n)
		}
	}
	got, err := d.GetSession(alice, "s")
	if err != nil {
		t.Fatal(err)
	}
	var data map[string]string
	if err := json.Unmarshal(got.SessionData, &data); err != nil || data["session_name"] != "b" {
		t.Errorf("session_data %s (%v)", got.SessionData, err)
	}
	runs, _, err := d.GetRuns(alice, db.RunFilter{SessionID: "s", Limit: 10, Page: 1})
	if err != nil || len(runs) != 4 {
		t.Fatalf("%d runs stored, want 4 (%v)", len(runs), err)
	}
}

// openCounted opens a fresh schema with one connection through a proxy that
// counts round trips.
func openCounted(t *testing.T) (*db.DB, *tripCounter) {
	t.Helper()
	raw := rawDB(t)
	u, err := url.Parse(testDSN())
	if err != nil || u.Host == "" {
		t.Fatalf("the counting proxy needs a postgres:// URL DSN, got %q", testDSN())
	}
	tc := startTripCounter(t, u.Host)
	u.Host = tc.ln.Addr().String()
	schema := randomName()
	d, err := postgres.Open(ctx, postgres.Config{DSN: u.String(), Schema: schema, MaxOpenConns: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		d.Close()
		raw.ExecContext(ctx, "DROP SCHEMA IF EXISTS "+schema+" CASCADE")
	})
	return d, tc
}

// tripCounter forwards loopback connections to a server and counts round
// trips: the client's bytes that follow a reply of the server (or nothing)
// start one. The pool's liveness pings ("-- ping", sent by pgx after a
// second idle) are not counted.
type tripCounter struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	trips  int
	client bool // the last bytes seen came from the client
}

func startTripCounter(t *testing.T, target string) *tripCounter {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	tc := &tripCounter{ln: ln, target: target}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			go tc.pipe(up, c, true)
			go tc.pipe(c, up, false)
		}
	}()
	return tc
}

func (tc *tripCounter) pipe(dst, src net.Conn, fromClient bool) {
	defer dst.Close()
	defer src.Close()
	buf := make([]byte, 64<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			tc.mu.Lock()
			if fromClient && !tc.client && !bytes.Contains(buf[:n], []byte("-- ping")) {
				tc.trips++
			}
			tc.client = fromClient
			tc.mu.Unlock()
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

func (tc *tripCounter) reset() {
	tc.mu.Lock()
	tc.trips, tc.client = 0, false
	tc.mu.Unlock()
}

func (tc *tripCounter) count() int {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	return tc.trips
}
