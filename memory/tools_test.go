package memory

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/dbtest/testdbs"
	"github.com/agentryhq/agentry/model"
	"github.com/agentryhq/agentry/run"
)

// The past-session tools, called as a model calls them (JSON arguments),
// see only the caller's own sessions of the caller's component: another
// user's session (also one whose user id differs only in case), or the
// user's session with another agent, is not found and never listed.
func TestPastSessionTools_OnlyTheCallersOwnSessions(t *testing.T) {
	testdbs.Each(t, func(t *testing.T, d *db.DB) {
		for i, s := range []struct{ id, user, agent string }{{"s-u1", "u1", "a"}, {"s-u2", "u2", "a"}, {"s-u1-b", "u1", "b"}, {"s-U1", "U1", "a"}} {
			if _, err := d.UpsertSession(bg, &db.Session{SessionID: s.id, SessionType: run.TypeAgent, AgentID: s.agent, UserID: s.user, CreatedAt: int64(100 + i)}); err != nil {
				t.Fatal(err)
			}
			o := &run.Output{RunID: s.id + "-r", SessionID: s.id, AgentID: s.agent, UserID: s.user, Status: run.StatusCompleted, CreatedAt: int64(100 + i),
				Messages: []model.Message{{Role: model.RoleUser, Content: "secret of " + s.id}, {Role: model.RoleAssistant, Content: "noted"}}}
			row, err := db.RunFromOutput(o)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := d.UpsertRun(bg, row); err != nil {
				t.Fatal(err)
			}
		}
		tools := PastSessions{DB: d}.Tools(func(context.Context) Caller {
			return Caller{UserID: "u1", SessionID: "now", Component: run.Component{Type: run.TypeAgent, ID: "a"}}
		})
		search, read := tools[0], tools[1]
		out, err := search.Call(bg, json.RawMessage(`{}`))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out, "secret of s-u1") || strings.Contains(out, "s-u2") || strings.Contains(out, "s-u1-b") || strings.Contains(out, "s-U1") {
			t.Fatalf("search_past_sessions = %s", out)
		}
		for _, args := range []string{`{"session_id":"s-u2"}`, `{"session_id":"s-u1-b"}`, `{"session_id":"s-U1"}`, `{"session_id":"s-u2","num_runs":100}`, `{"session_id":""}`} {
			if out, err := read.Call(bg, json.RawMessage(args)); err != nil || out != "Session not found." {
				t.Fatalf("read_past_session %s = %q, %v", args, out, err)
			}
		}
		if out, err := read.Call(bg, json.RawMessage(`{"session_id":"s-u1"}`)); err != nil || !strings.Contains(out, "secret of s-u1") {
			t.Fatalf("own session = %q, %v", out, err)
		}
	})
}
