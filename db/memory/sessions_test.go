package memory_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/memory"
	"github.com/agentryhq/agentry/run"
)

func TestDialect_IsMemory(t *testing.T) {
	t.Parallel()
	if got := memory.New().Dialect(); got != "memory" {
		t.Fatalf("Dialect() = %q", got)
	}
	if got := newDB(t).ID; got != "memory" {
		t.Fatalf("db id = %q", got)
	}
}

func TestUpsertSession_RoundTripsAndKeepsCreatedAt(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	ctx := context.Background()
	in := session("s1", "u1")
	in.SessionData = json.RawMessage(`{"session_name":"Trip to Łódź","session_state":{"k":1}}`)
	in.Metadata = json.RawMessage(` null `)
	in.CreatedAt = 100
	got := mustSession(t, ctx, d, in)
	if got.CreatedAt != 100 || got.UpdatedAt == 0 || string(got.SessionData) != string(in.SessionData) || got.Metadata != nil {
		t.Fatalf("stored %+v", got)
	}
	upd := session("s1", "u1")
	upd.AgentID = "agent-2"
	upd.CreatedAt = 500
	if got := mustSession(t, ctx, d, upd); got.CreatedAt != 100 || got.AgentID != "agent-2" || got.SessionData != nil {
		t.Fatalf("updated %+v, want created_at 100 kept, agent-2 and session_data replaced", got)
	}
}

func TestUpsertSession_OwnershipGuard(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		stored      string
		ctx         context.Context
		recordUser  string
		wantErr     error
		wantStoreAs string
	}{
		{"unowned row claimed by scoped user", "", as("alice"), "", nil, "alice"},
		{"owner updates", "alice", as("alice"), "", nil, "alice"},
		{"scope wins over the record's user", "alice", as("alice"), "bob", nil, "alice"},
		{"unscoped writer naming the owner", "alice", context.Background(), "alice", nil, "alice"},
		{"other scoped user", "alice", as("bob"), "", db.ErrNotFound, "alice"},
		{"unscoped writer naming another user", "alice", context.Background(), "bob", db.ErrNotFound, "alice"},
		{"unscoped writer without user over an owned row", "alice", context.Background(), "", db.ErrNotFound, "alice"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			d := newDB(t)
			mustSession(t, context.Background(), d, session("s", tt.stored))
			upd := session("s", tt.recordUser)
			upd.AgentID = "changed"
			_, err := d.UpsertSession(tt.ctx, upd)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			got, err := d.GetSession(context.Background(), "s")
			if err != nil {
				t.Fatal(err)
			}
			if got.UserID != tt.wantStoreAs || (tt.wantErr != nil) != (got.AgentID == "agent-1") {
				t.Errorf("stored %+v", got)
			}
		})
	}
}

func TestSessions_UserScopeHidesOtherUsers(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	alice, bob := as("alice"), as("bob")
	mustSession(t, alice, d, session("sa", ""))
	mustSession(t, context.Background(), d, session("free", ""))
	mustRun(t, alice, d, runRow("ra", "sa", run.StatusCompleted))

	if _, err := d.GetSession(bob, "sa"); !errors.Is(err, db.ErrNotFound) {
		t.Errorf("bob get: %v", err)
	}
	if _, err := d.GetSession(alice, "free"); !errors.Is(err, db.ErrNotFound) {
		t.Errorf("unowned session visible under a scope: %v", err)
	}
	if list, total, err := d.ListSessions(bob, db.SessionFilter{Limit: 10, Page: 1}); err != nil || total != 0 || len(list) != 0 {
		t.Errorf("bob list: %d sessions, total %d, %v", len(list), total, err)
	}
	if err := d.DeleteSessions(bob, "sa"); err != nil {
		t.Fatal(err)
	}
	if _, err := d.GetSession(alice, "sa"); err != nil {
		t.Errorf("bob deleted alice's session: %v", err)
	}
	if _, err := d.GetRun(alice, "ra"); err != nil {
		t.Errorf("bob deleted alice's run: %v", err)
	}
}

func TestDeleteSessions_CascadesToRuns(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	ctx := context.Background()
	for _, s := range []string{"s1", "s2", "s3"} {
		mustSession(t, ctx, d, session(s, ""))
		mustRun(t, ctx, d, runRow("r-"+s, s, run.StatusCompleted))
	}
	if err := d.DeleteSessions(ctx, "s1", "s2", "missing"); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"r-s1", "r-s2"} {
		if _, err := d.GetRun(ctx, id); !errors.Is(err, db.ErrNotFound) {
			t.Errorf("run %s survived its session: %v", id, err)
		}
	}
	rs, total, err := d.GetRuns(ctx, db.RunFilter{Limit: 10, Page: 1, WithTotal: true})
	if err != nil || runIDs(rs) != "[r-s3]" || total != 1 {
		t.Errorf("remaining runs %s total %d, %v", runIDs(rs), total, err)
	}
	// A session recreated with the same id starts with an empty run index.
	mustSession(t, ctx, d, session("s1", ""))
	if r := mustRun(t, ctx, d, runRow("again", "s1", "")); *r.RunIndex != 0 {
		t.Errorf("run_index after cascade = %d, want 0", *r.RunIndex)
	}
}

func TestListSessions_FiltersSortsAndPages(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	ctx := context.Background()
	rows := []db.Session{
		{SessionID: "a", SessionType: run.TypeAgent, AgentID: "ag", UserID: "u1", SessionData: json.RawMessage(`{"session_name":"Weekly PLANNING"}`), CreatedAt: 3, UpdatedAt: 10},
		{SessionID: "b", SessionType: run.TypeTeam, TeamID: "tm", UserID: "u2", SessionData: json.RawMessage(`{"session_name":"Zürich trip"}`), CreatedAt: 1, UpdatedAt: 30},
		{SessionID: "c", SessionType: run.TypeWorkflow, WorkflowID: "ag", CreatedAt: 2, UpdatedAt: 20},
		{SessionID: "d", SessionType: run.TypeAgent, AgentID: "ag", UserID: "u1", SessionData: json.RawMessage(`{"session_name":7}`), CreatedAt: 2, UpdatedAt: 20},
	}
	for i := range rows {
		if _, err := d.Driver().UpsertSession(ctx, &rows[i]); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name      string
		f         db.SessionFilter
		want      string
		wantTotal int
	}{
		{"default created_at desc, then id", db.SessionFilter{}, "[a d c b]", 4},
		{"created_at asc", db.SessionFilter{SortOrder: "asc"}, "[b c d a]", 4},
		{"updated_at desc", db.SessionFilter{SortBy: "updated_at"}, "[b d c a]", 4},
		{"type", db.SessionFilter{SessionType: run.TypeAgent}, "[a d]", 2},
		{"component of a type", db.SessionFilter{SessionType: run.TypeWorkflow, ComponentID: "ag"}, "[c]", 1},
		{"component of any type", db.SessionFilter{ComponentID: "ag"}, "[a d c]", 3},
		{"user", db.SessionFilter{UserID: "u1"}, "[a d]", 2},
		{"name case-insensitive", db.SessionFilter{SessionName: "planning"}, "[a]", 1},
		{"name unicode", db.SessionFilter{SessionName: "ZÜRICH"}, "[b]", 1},
		{"page 2 of 3", db.SessionFilter{Limit: 3, Page: 2}, "[b]", 4},
		{"past the end", db.SessionFilter{Limit: 3, Page: 5}, "[]", 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := tt.f
			if f.Limit == 0 {
				f.Limit, f.Page = 10, 1
			}
			got, total, err := d.ListSessions(ctx, f)
			if err != nil {
				t.Fatal(err)
			}
			if s := fmt.Sprint(ids(got, func(s db.Session) string { return s.SessionID })); s != tt.want || total != tt.wantTotal {
				t.Errorf("got %s total %d, want %s total %d", s, total, tt.want, tt.wantTotal)
			}
		})
	}
}

func TestUpsertSession_RejectsInvalidJSON(t *testing.T) {
	t.Parallel()
	s := session("s", "")
	s.Summary = json.RawMessage(`{"oops"`)
	if _, err := newDB(t).UpsertSession(context.Background(), s); !errors.Is(err, db.ErrInvalidRecord) {
		t.Fatalf("err = %v, want ErrInvalidRecord", err)
	}
}

func TestSessions_NoAliasing(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	ctx := context.Background()
	in := session("s", "")
	in.SessionData = json.RawMessage(`{"session_name":"n"}`)
	out := mustSession(t, ctx, d, in)
	in.SessionData[3] = 'X'
	out.SessionData[3] = 'Y'
	got, _ := d.GetSession(ctx, "s")
	got.SessionData[3] = 'Z'
	if again, _ := d.GetSession(ctx, "s"); string(again.SessionData) != `{"session_name":"n"}` {
		t.Fatalf("stored session changed through a caller's slice: %s", again.SessionData)
	}
}

// A read copies the session's JSON columns in one block; appending to one
// column must not write into the next.
func TestGetSession_AppendToAColumnKeepsTheOthers(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	ctx := context.Background()
	in := session("s", "")
	in.SessionData = json.RawMessage(`{"session_name":"n"}`)
	in.AgentData = json.RawMessage(`{"name":"a"}`)
	in.Metadata = json.RawMessage(`{"k":1}`)
	mustSession(t, ctx, d, in)
	got, err := d.GetSession(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	grown := append(got.SessionData, `XXXXXXXX`...)
	if string(got.AgentData) != `{"name":"a"}` || string(got.Metadata) != `{"k":1}` {
		t.Fatalf("append to session_data wrote into the next column: agent_data %s, metadata %s (grown %s)", got.AgentData, got.Metadata, grown)
	}
	if got.TeamData != nil || got.WorkflowData != nil || got.Summary != nil {
		t.Fatalf("NULL columns read back as %q %q %q", got.TeamData, got.WorkflowData, got.Summary)
	}
}

func TestDriver_ClosedAndCancelled(t *testing.T) {
	t.Parallel()
	d := memory.New()
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := d.GetSession(cancelled, "s"); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled context: %v", err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	calls := map[string]func() error{
		"UpsertSession": func() error { _, err := d.UpsertSession(context.Background(), session("s", "")); return err },
		"GetRuns": func() error {
			_, _, err := d.GetRuns(context.Background(), db.RunFilter{Limit: 1, Page: 1})
			return err
		},
		"DeleteMemories":  func() error { return d.DeleteMemories(context.Background(), "m") },
		"UserMemoryStats": func() error { _, _, err := d.UserMemoryStats(context.Background(), 1, 1); return err },
	}
	for name, call := range calls {
		if err := call(); !errors.Is(err, memory.ErrClosed) {
			t.Errorf("%s after Close: %v, want ErrClosed", name, err)
		}
	}
}

// A new run's session is found through the session's run index when it has
// one (one map lookup a save); the index must never outlive its session, or a
// run could be stored in a deleted session. Saves through every path.
func TestUpsertRun_RefusesADeletedSessionThatHadRuns(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	ctx := context.Background()
	mustSession(t, ctx, d, session("s1", ""))
	mustRun(t, ctx, d, runRow("r1", "s1", run.StatusCompleted))
	mustRun(t, ctx, d, runRow("r2", "s1", run.StatusCompleted))
	if err := d.DeleteSessions(ctx, "s1"); err != nil {
		t.Fatal(err)
	}
	if _, err := d.UpsertRun(ctx, runRow("r3", "s1", run.StatusCompleted)); !errors.Is(err, db.ErrInvalidRecord) {
		t.Errorf("UpsertRun into a deleted session: %v, want ErrInvalidRecord", err)
	}
	if _, _, err := d.SaveRunOwned(ctx, nil, runRow("r4", "s1", run.StatusCompleted)); !errors.Is(err, db.ErrInvalidRecord) {
		t.Errorf("SaveRunOwned into a deleted session: %v, want ErrInvalidRecord", err)
	}
	if _, _, err := d.SaveRun(ctx, nil, runRow("r5", "s1", run.StatusCompleted)); !errors.Is(err, db.ErrInvalidRecord) {
		t.Errorf("SaveRun into a deleted session: %v, want ErrInvalidRecord", err)
	}

	// A session whose runs were all deleted still takes runs, from index 0,
	// and the next one continues from there.
	mustSession(t, ctx, d, session("s2", ""))
	mustRun(t, ctx, d, runRow("q1", "s2", run.StatusCompleted))
	if err := d.DeleteRun(ctx, "q1"); err != nil {
		t.Fatal(err)
	}
	for i, id := range []string{"q2", "q3"} {
		_, r, err := d.SaveRunOwned(ctx, nil, runRow(id, "s2", run.StatusCompleted))
		if err != nil || *r.RunIndex != int64(i) {
			t.Fatalf("SaveRunOwned(%s) after the session's last run was deleted: %v, run_index %v, want %d", id, err, r, i)
		}
	}
}
