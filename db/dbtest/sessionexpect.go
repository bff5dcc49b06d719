package dbtest

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/run"
)

// sessionWriter is one way a session row is written: alone or with a run
// (runID "" for UpsertSession). ok is false when the driver has no such
// way (ErrNoTx, ErrNotPiped): the case does not apply to it.
type sessionWriter struct {
	name    string
	withRun bool
	write   func(ctx context.Context, d *db.DB, s *db.Session, runID string) (out *db.Session, ok bool, err error)
}

var sessionWriters = []sessionWriter{
	{"UpsertSession", false, func(ctx context.Context, d *db.DB, s *db.Session, _ string) (*db.Session, bool, error) {
		out, err := d.UpsertSession(ctx, s)
		return out, true, err
	}},
	{"SaveRun", true, func(ctx context.Context, d *db.DB, s *db.Session, runID string) (*db.Session, bool, error) {
		out, _, err := d.SaveRun(ctx, s, NewRun(s.SessionID, runID))
		return out, true, err
	}},
	{"SaveRunOwned", true, func(ctx context.Context, d *db.DB, s *db.Session, runID string) (*db.Session, bool, error) {
		cp := *s
		out, _, err := d.SaveRunOwned(ctx, &cp, NewRun(s.SessionID, runID))
		return out, true, err
	}},
	{"SaveRunWith", true, func(ctx context.Context, d *db.DB, s *db.Session, runID string) (*db.Session, bool, error) {
		out, _, err := d.SaveRunWith(ctx, s, NewRun(s.SessionID, runID), nil)
		return out, !errors.Is(err, db.ErrNoTx), err
	}},
	{"SaveRunWithTx", true, func(ctx context.Context, d *db.DB, s *db.Session, runID string) (*db.Session, bool, error) {
		out, _, err := d.SaveRunWith(ctx, s, NewRun(s.SessionID, runID), func(context.Context, *sql.Tx) error { return nil })
		return out, !errors.Is(err, db.ErrNoTx), err
	}},
	{"SaveRunsPiped", true, func(ctx context.Context, d *db.DB, s *db.Session, runID string) (*db.Session, bool, error) {
		err := d.SaveRunsPiped(ctx, nil, []db.PipedRunWrite{{Ctx: ctx, Session: s, Run: NewRun(s.SessionID, runID)}})
		if errors.Is(err, db.ErrNotPiped) {
			return nil, false, err
		}
		if err != nil {
			return nil, true, err
		}
		out, err := d.GetSession(ctx, s.SessionID)
		return out, true, err
	}},
}

// forEachSessionWriter runs fn for each way of writing a session the
// driver has, in a subtest of its own.
func forEachSessionWriter(t *testing.T, d *db.DB, fn func(t *testing.T, w sessionWriter, sid string)) {
	t.Helper()
	ran := 0
	for _, w := range sessionWriters {
		t.Run(w.name, func(t *testing.T) {
			// Probe: an unconditional write of a fresh session tells whether
			// the driver writes this way at all.
			sid := "probe-" + w.name
			_, ok, err := w.write(bg, d, &db.Session{SessionID: sid, SessionType: run.TypeAgent}, sid+"-r")
			if !ok {
				return
			}
			noErr(t, err)
			ran++
			fn(t, w, "s-"+w.name)
		})
	}
	if ran < 3 {
		t.Fatalf("only %d ways of writing a session ran", ran)
	}
}

// storedData is the session's stored session_data; absent: no row.
func storedData(t *testing.T, d *db.DB, sid string) (data json.RawMessage, exists bool) {
	t.Helper()
	s, err := d.GetSession(bg, sid)
	if errors.Is(err, db.ErrNotFound) {
		return nil, false
	}
	noErr(t, err)
	return s.SessionData, true
}

// runStored reports whether the run row exists.
func runStored(t *testing.T, d *db.DB, runID string) bool {
	t.Helper()
	_, err := d.GetRun(bg, runID)
	if errors.Is(err, db.ErrNotFound) {
		return false
	}
	noErr(t, err)
	return true
}

// checkRefused checks a conditional write that must be refused with want
// and leave the session's data as before and its run unwritten.
func checkRefused(t *testing.T, d *db.DB, w sessionWriter, s *db.Session, runID string, want error) {
	t.Helper()
	before, existed := storedData(t, d, s.SessionID)
	out, _, err := w.write(bg, d, s, runID)
	if !errors.Is(err, want) {
		t.Fatalf("write expecting %v (%s) = %v, want %v", s.Expect.Row, s.Expect.Data, err, want)
	}
	if out != nil {
		t.Fatalf("a refused write returned a session row: %+v", out)
	}
	after, exists := storedData(t, d, s.SessionID)
	if exists != existed || (exists && !db.SameJSON(before, after)) {
		t.Fatalf("a refused write changed the stored row: %s (exists %v) -> %s (exists %v)", before, existed, after, exists)
	}
	if w.withRun && runStored(t, d, runID) {
		t.Fatalf("a refused write stored its run %s", runID)
	}
}

// SessionWith is an agent session sid holding data as its session_data
// (none when ""), written expecting e.
func SessionWith(sid, data string, e db.SessionExpect) *db.Session {
	s := &db.Session{SessionID: sid, SessionType: run.TypeAgent, AgentID: "agent-1", Expect: e}
	if data != "" {
		s.SessionData = json.RawMessage(data)
	}
	return s
}

var sessionExpectTests = map[string]func(t *testing.T, d *db.DB){
	"Expect_NoRowCreatesOnceOnly": func(t *testing.T, d *db.DB) {
		forEachSessionWriter(t, d, func(t *testing.T, w sessionWriter, sid string) {
			out, _, err := w.write(bg, d, SessionWith(sid, `{"session_state":{"n":1}}`, db.ExpectOf(nil)), sid+"-a")
			noErr(t, err)
			equal(t, "returned row's expectation", out.Expect, db.SessionExpect{})
			got, ok := storedData(t, d, sid)
			equal(t, "created", ok, true)
			jsonEqual(t, "created data", got, []byte(`{"session_state":{"n":1}}`))
			// A second writer that also found no row: the row exists now.
			checkRefused(t, d, w, SessionWith(sid, `{"session_state":{"n":2}}`, db.ExpectOf(nil)), sid+"-b", db.ErrSessionChanged)
		})
	},
	"Expect_DataWritesOverTheRowItRead": func(t *testing.T, d *db.DB) {
		forEachSessionWriter(t, d, func(t *testing.T, w sessionWriter, sid string) {
			first, _, err := w.write(bg, d, SessionWith(sid, `{"session_state":{"n":1}}`, db.SessionExpect{}), sid+"-a")
			noErr(t, err)
			if w.name == "SaveRunsPiped" {
				first, err = d.GetSession(bg, sid)
				noErr(t, err)
			}
			// Each write expects the row the previous one returned.
			prev := first
			for i := 2; i <= 4; i++ {
				out, _, err := w.write(bg, d, SessionWith(sid, fmt.Sprintf(`{"session_state":{"n":%d}}`, i), db.ExpectOf(prev)), sid+"-"+strconv.Itoa(i))
				noErr(t, err)
				equal(t, "returned row's expectation", out.Expect, db.SessionExpect{})
				got, _ := storedData(t, d, sid)
				jsonEqual(t, "written data", got, fmt.Appendf(nil, `{"session_state":{"n":%d}}`, i))
				prev = out
			}
			// The row as read is as good as the row as returned.
			read, err := d.GetSession(bg, sid)
			noErr(t, err)
			_, _, err = w.write(bg, d, SessionWith(sid, `{"session_state":{"n":5}}`, db.ExpectOf(read)), sid+"-5")
			noErr(t, err)
		})
	},
	"Expect_StaleDataIsRefused": func(t *testing.T, d *db.DB) {
		forEachSessionWriter(t, d, func(t *testing.T, w sessionWriter, sid string) {
			mustSession(t, bg, d, db.Session{SessionID: sid, AgentID: "agent-1", SessionData: json.RawMessage(`{"session_state":{"n":1}}`)})
			read, err := d.GetSession(bg, sid)
			noErr(t, err)
			// Another writer (another process) changes the row.
			mustSession(t, bg, d, db.Session{SessionID: sid, AgentID: "agent-1", SessionData: json.RawMessage(`{"session_state":{"n":1,"theirs":true}}`)})
			checkRefused(t, d, w, SessionWith(sid, `{"session_state":{"n":2}}`, db.ExpectOf(read)), sid+"-b", db.ErrSessionChanged)
			got, _ := storedData(t, d, sid)
			jsonEqual(t, "the other writer's data kept", got, []byte(`{"session_state":{"n":1,"theirs":true}}`))
			// Read again, the write goes through.
			read, err = d.GetSession(bg, sid)
			noErr(t, err)
			_, _, err = w.write(bg, d, SessionWith(sid, `{"session_state":{"n":2,"theirs":true}}`, db.ExpectOf(read)), sid+"-c")
			noErr(t, err)
		})
	},
	"Expect_DataInAnotherFormMatches": func(t *testing.T, d *db.DB) {
		forEachSessionWriter(t, d, func(t *testing.T, w sessionWriter, sid string) {
			// A Python writer's spacing and key order.
			mustSession(t, bg, d, db.Session{SessionID: sid, AgentID: "agent-1", SessionData: json.RawMessage(`{"session_state": {"b": 1, "a": [1, 2.5]}, "session_name": "x"}`)})
			e := db.SessionExpect{Row: db.ExpectData, Data: json.RawMessage(`{"session_name":"x","session_state":{"a":[1,2.5],"b":1}}`)}
			_, _, err := w.write(bg, d, SessionWith(sid, `{"session_name":"y"}`, e), sid+"-b")
			noErr(t, err)
			got, _ := storedData(t, d, sid)
			jsonEqual(t, "written", got, []byte(`{"session_name":"y"}`))
		})
	},
	"Expect_EmptyDataMatchesNoData": func(t *testing.T, d *db.DB) {
		forEachSessionWriter(t, d, func(t *testing.T, w sessionWriter, sid string) {
			mustSession(t, bg, d, db.Session{SessionID: sid, AgentID: "agent-1"})
			read, err := d.GetSession(bg, sid)
			noErr(t, err)
			_, _, err = w.write(bg, d, SessionWith(sid, `{"session_name":"y"}`, db.ExpectOf(read)), sid+"-b")
			noErr(t, err)
			// Data expected where there is none: refused.
			sid2 := sid + "-2"
			mustSession(t, bg, d, db.Session{SessionID: sid2, AgentID: "agent-1"})
			checkRefused(t, d, w, SessionWith(sid2, `{"session_name":"z"}`, db.SessionExpect{Row: db.ExpectData, Data: json.RawMessage(`{"session_name":"y"}`)}), sid2+"-b", db.ErrSessionChanged)
		})
	},
	"Expect_DeletedRowIsRefused": func(t *testing.T, d *db.DB) {
		forEachSessionWriter(t, d, func(t *testing.T, w sessionWriter, sid string) {
			read := mustSession(t, bg, d, db.Session{SessionID: sid, AgentID: "agent-1", SessionData: json.RawMessage(`{"session_name":"x"}`)})
			noErr(t, d.DeleteSessions(bg, sid))
			checkRefused(t, d, w, SessionWith(sid, `{"session_name":"y"}`, db.ExpectOf(read)), sid+"-b", db.ErrSessionChanged)
		})
	},
	"Expect_AnotherUsersRowIsNotFound": func(t *testing.T, d *db.DB) {
		forEachSessionWriter(t, d, func(t *testing.T, w sessionWriter, sid string) {
			read := mustSession(t, bg, d, db.Session{SessionID: sid, AgentID: "agent-1", UserID: "alice", SessionData: json.RawMessage(`{"session_name":"x"}`)})
			bob := db.WithUserScope(bg, "bob")
			for _, e := range []db.SessionExpect{db.ExpectOf(read), db.ExpectOf(nil), {Row: db.ExpectData, Data: json.RawMessage(`{"session_name":"other"}`)}} {
				s := SessionWith(sid, `{"session_name":"bob's"}`, e)
				out, _, err := w.write(bob, d, s, sid+"-bob")
				if !errors.Is(err, db.ErrNotFound) || out != nil {
					t.Fatalf("bob's write over alice's session expecting %v = %v (%v), want ErrNotFound", e.Row, out, err)
				}
			}
			got, _ := storedData(t, d, sid)
			jsonEqual(t, "alice's data kept", got, []byte(`{"session_name":"x"}`))
		})
	},
	// Expect_ConcurrentWritersLoseNoUpdate: writers that each read, add one
	// to a counter and write expecting what they read, reading again when
	// refused, lose no increment (an unconditional write would).
	"Expect_ConcurrentWritersLoseNoUpdate": func(t *testing.T, d *db.DB) {
		forEachSessionWriter(t, d, func(t *testing.T, w sessionWriter, sid string) {
			var writers []incrementWriter
			for range 4 {
				writers = append(writers, incrementWriter{d, func(s *db.Session, runID string) error {
					_, _, err := w.write(bg, d, s, runID)
					return err
				}})
			}
			incrementRace(t, sid, 5, writers)
		})
	},
}

// IncrementRace checks compare-and-set across handles of one database
// (processes sharing it): on each handle three writers (one upserting the
// session alone, two saving runs with it) each read session sid, add one
// to a counter in its state and write expecting what they read, reading
// again when refused, ten times; no increment may be lost. It creates the
// session first.
func IncrementRace(t *testing.T, handles []*db.DB, sid string) {
	t.Helper()
	var writers []incrementWriter
	for _, d := range handles {
		writers = append(writers, incrementWriter{d, func(s *db.Session, _ string) error {
			_, err := d.UpsertSession(bg, s)
			return err
		}})
		for range 2 {
			writers = append(writers, incrementWriter{d, func(s *db.Session, runID string) error {
				_, _, err := d.SaveRun(bg, s, NewRun(s.SessionID, runID))
				return err
			}})
		}
	}
	incrementRace(t, sid, 10, writers)
}

// incrementWriter writes a session (with the run runID, when it writes
// one) through its handle.
type incrementWriter struct {
	d     *db.DB
	write func(s *db.Session, runID string) error
}

// incrementRace creates session sid with a counter at 0, runs writers at
// once, each adding one to the counter each times (read, write expecting
// the read, read again when refused), and checks the counter.
func incrementRace(t *testing.T, sid string, each int, writers []incrementWriter) {
	t.Helper()
	mustSession(t, bg, writers[0].d, db.Session{SessionID: sid, AgentID: "agent-1", SessionData: json.RawMessage(`{"session_state":{"n":0}}`)})
	var wg sync.WaitGroup
	errs := make(chan error, len(writers))
	for g, w := range writers {
		wg.Go(func() {
			for i := range each {
				for attempt := 0; ; attempt++ {
					if attempt == 500 {
						errs <- fmt.Errorf("writer %d: 500 refusals in a row", g)
						return
					}
					read, err := w.d.GetSession(bg, sid)
					if err != nil {
						errs <- err
						return
					}
					st, _ := db.SessionStateOf(read.SessionData)
					n, _ := st["n"].(float64)
					data := fmt.Sprintf(`{"session_state":{"n":%d}}`, int(n)+1)
					err = w.write(SessionWith(sid, data, db.ExpectOf(read)), fmt.Sprintf("%s-%d-%d-%d", sid, g, i, attempt))
					if errors.Is(err, db.ErrSessionChanged) {
						continue
					}
					if err != nil {
						errs <- err
						return
					}
					break
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	got, _ := storedData(t, writers[0].d, sid)
	jsonEqual(t, "counter", got, fmt.Appendf(nil, `{"session_state":{"n":%d}}`, len(writers)*each))
}
