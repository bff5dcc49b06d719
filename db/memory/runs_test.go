package memory_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/memory"
	"github.com/agentryhq/agentry/run"
)

func TestUpsertRun_AssignsRunIndexPerSession(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	ctx := context.Background()
	mustSession(t, ctx, d, session("s1", ""))
	mustSession(t, ctx, d, session("s2", ""))
	seven := int64(7)
	steps := []struct {
		run  *db.Run
		want int64
	}{
		{runRow("a", "s1", run.StatusCompleted), 0},
		{runRow("b", "s1", run.StatusCompleted), 1},
		{runRow("x", "s2", run.StatusCompleted), 0},
		{&db.Run{RunID: "c", SessionID: "s1", RunType: run.TypeAgent, RunIndex: &seven, RunData: json.RawMessage(`{}`)}, 7},
		{runRow("d", "s1", run.StatusCompleted), 8},
	}
	for _, s := range steps {
		if got := mustRun(t, ctx, d, s.run); got.RunIndex == nil || *got.RunIndex != s.want {
			t.Errorf("run %s: run_index = %v, want %d", s.run.RunID, got.RunIndex, s.want)
		}
	}
	// Deleting the highest run lets max+1 follow the remaining ones, like SQL MAX().
	if err := d.DeleteRun(ctx, "d"); err != nil {
		t.Fatal(err)
	}
	if got := mustRun(t, ctx, d, runRow("e", "s1", run.StatusCompleted)); *got.RunIndex != 8 {
		t.Errorf("after delete: run_index = %d, want 8", *got.RunIndex)
	}
}

func TestUpsertRun_ConflictKeepsIndexAndUpdatesOnlyMutableColumns(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	ctx := context.Background()
	mustSession(t, ctx, d, session("s1", ""))
	first := runRow("r1", "s1", run.StatusRunning)
	first.CreatedAt = 100
	mustRun(t, ctx, d, first)
	mustRun(t, ctx, d, runRow("r2", "s1", run.StatusRunning))

	five := int64(5)
	upd := &db.Run{
		RunID: "r1", SessionID: "s1", RunType: run.TypeTeam, AgentID: "other", TeamID: "team",
		UserID: "u1", ParentRunID: "p", Status: run.StatusCompleted, RunIndex: &five,
		RunData: json.RawMessage(`{"run_id":"r1","content":"done"}`), CreatedAt: 999,
	}
	got := mustRun(t, ctx, d, upd)
	want := db.Run{
		RunID: "r1", SessionID: "s1", RunType: run.TypeAgent, AgentID: "agent-1", UserID: "u1",
		ParentRunID: "p", Status: run.StatusCompleted, RunData: upd.RunData, CreatedAt: 100,
	}
	if *got.RunIndex != 0 {
		t.Errorf("run_index = %d, want the existing 0", *got.RunIndex)
	}
	read, err := d.GetRun(ctx, "r1")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []*db.Run{got, read} {
		if r.RunType != want.RunType || r.AgentID != want.AgentID || r.TeamID != "" || r.UserID != want.UserID ||
			r.ParentRunID != want.ParentRunID || r.Status != want.Status || string(r.RunData) != string(want.RunData) ||
			r.CreatedAt != want.CreatedAt || r.UpdatedAt == 0 || *r.RunIndex != 0 {
			t.Errorf("stored run = %+v, want %+v with run_index 0", r, want)
		}
	}
}

func TestUpsertRun_ConcurrentWritersGetDistinctIndexes(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	ctx := context.Background()
	mustSession(t, ctx, d, session("s1", ""))
	const n = 200
	var wg sync.WaitGroup
	idx := make([]int64, n)
	for i := range n {
		wg.Go(func() {
			r, err := d.UpsertRun(ctx, runRow(fmt.Sprintf("r%03d", i), "s1", run.StatusCompleted))
			if err != nil {
				t.Error(err)
				return
			}
			idx[i] = *r.RunIndex
			if _, _, err := d.GetRuns(ctx, db.RunFilter{SessionID: "s1", Limit: 5, Page: 1}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	seen := make([]bool, n)
	for _, i := range idx {
		if i < 0 || i >= n || seen[i] {
			t.Fatalf("run_index %d duplicated or out of 0..%d", i, n-1)
		}
		seen[i] = true
	}
}

func TestUpsertRun_Rejects(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	drv := memory.New()
	ctx := context.Background()
	mustSession(t, ctx, d, session("s1", ""))
	mustSession(t, as("alice"), d, session("sa", "alice"))
	mustRun(t, as("alice"), d, runRow("ra", "sa", run.StatusCompleted))
	tests := []struct {
		name string
		do   func() error
		want error
	}{
		{"missing session (foreign key)", func() error { _, err := d.UpsertRun(ctx, runRow("r", "nope", "")); return err }, db.ErrInvalidRecord},
		{"another user's run", func() error { _, err := d.UpsertRun(as("bob"), runRow("ra", "sa", run.StatusError)); return err }, db.ErrNotFound},
		{"invalid run_data", func() error {
			r := runRow("r", "s1", "")
			r.RunData = json.RawMessage(`{"a":`)
			_, err := d.UpsertRun(ctx, r)
			return err
		}, db.ErrInvalidRecord},
		{"driver: null run_data", func() error {
			r := runRow("r", "s1", "")
			r.RunData = json.RawMessage(`null`)
			_, err := drv.UpsertRun(ctx, r)
			return err
		}, db.ErrInvalidRecord},
		{"driver: missing run_id", func() error { _, err := drv.UpsertRun(ctx, &db.Run{}); return err }, db.ErrInvalidRecord},
		{"driver: missing session_id", func() error { _, err := drv.UpsertRun(ctx, &db.Run{RunID: "x"}); return err }, db.ErrInvalidRecord},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.do(); !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
		})
	}
	got, err := d.GetRun(ctx, "ra")
	if err != nil || got.Status != run.StatusCompleted || got.UserID != "alice" {
		t.Errorf("another user's run was changed: %+v, %v", got, err)
	}
}

func TestUpsertRun_UnscopedWriterMayReassignOwner(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	mustSession(t, as("alice"), d, session("s", ""))
	mustRun(t, as("alice"), d, runRow("r", "s", run.StatusRunning))
	moved := runRow("r", "s", run.StatusCompleted)
	moved.UserID = "bob"
	got := mustRun(t, context.Background(), d, moved)
	if got.UserID != "bob" || got.Status != run.StatusCompleted {
		t.Fatalf("unscoped update stored %+v, want bob and COMPLETED (as the SQL drivers do)", got)
	}
}

func TestRuns_UserScope(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	alice, bob := as("alice"), as("bob")
	mustSession(t, alice, d, session("s1", ""))
	mustRun(t, alice, d, runRow("a1", "s1", run.StatusCompleted))
	mustRun(t, context.Background(), d, runRow("free", "s1", run.StatusCompleted))

	if r, err := d.GetRun(alice, "a1"); err != nil || r.UserID != "alice" {
		t.Fatalf("owner read: %+v, %v", r, err)
	}
	for name, fn := range map[string]func() error{
		"get":    func() error { _, err := d.GetRun(bob, "a1"); return err },
		"delete": func() error { return d.DeleteRun(bob, "a1") },
		"get unowned run under a scope": func() error {
			_, err := d.GetRun(alice, "free")
			return err
		},
	} {
		if err := fn(); !errors.Is(err, db.ErrNotFound) {
			t.Errorf("%s: err = %v, want ErrNotFound", name, err)
		}
	}
	list := func(ctx context.Context) string {
		rs, _, err := d.GetRuns(ctx, db.RunFilter{SessionID: "s1", Limit: 10, Page: 1})
		if err != nil {
			t.Fatal(err)
		}
		return runIDs(rs)
	}
	if got := list(bob); got != "[]" {
		t.Errorf("bob lists %s", got)
	}
	if got := list(alice); got != "[a1]" {
		t.Errorf("alice lists %s", got)
	}
	if got := list(context.Background()); got != "[a1 free]" {
		t.Errorf("unscoped lists %s", got)
	}
	if h, err := d.HistoryRuns(bob, db.HistoryQuery{SessionID: "s1", Limit: 10}); err != nil || len(h) != 0 {
		t.Errorf("bob history = %s, %v", runIDs(h), err)
	}
	if err := d.DeleteRun(alice, "a1"); err != nil {
		t.Fatalf("owner delete: %v", err)
	}
	if _, err := d.GetRun(alice, "a1"); !errors.Is(err, db.ErrNotFound) {
		t.Errorf("after delete: %v", err)
	}
}

func TestGetRuns_FiltersSortsAndPages(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	ctx := context.Background()
	mustSession(t, ctx, d, session("s1", ""))
	mustSession(t, ctx, d, session("s2", ""))
	rows := []*db.Run{
		{RunID: "r0", SessionID: "s1", RunType: run.TypeAgent, AgentID: "a", Status: run.StatusCompleted, CreatedAt: 30, UpdatedAt: 5},
		{RunID: "r1", SessionID: "s1", RunType: run.TypeTeam, TeamID: "t", Status: run.StatusError, CreatedAt: 10, UpdatedAt: 6},
		{RunID: "r2", SessionID: "s1", RunType: run.TypeAgent, AgentID: "a", ParentRunID: "r1", Status: run.StatusPaused, CreatedAt: 20, UpdatedAt: 4},
		{RunID: "r3", SessionID: "s1", RunType: run.TypeWorkflow, WorkflowID: "w", UserID: "u", Status: run.StatusCompleted, CreatedAt: 20, UpdatedAt: 4},
		{RunID: "x0", SessionID: "s2", RunType: run.TypeAgent, AgentID: "a", Status: run.StatusCompleted, CreatedAt: 1, UpdatedAt: 1},
	}
	for _, r := range rows {
		r.RunData = json.RawMessage(`{}`)
		// Bypass the front so created_at/updated_at stay as given.
		if _, err := d.Driver().UpsertRun(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name      string
		f         db.RunFilter
		want      string
		wantTotal int
	}{
		{"default order run_index asc", db.RunFilter{SessionID: "s1"}, "[r0 r1 r2 r3]", 4},
		{"all sessions", db.RunFilter{}, "[x0 r0 r1 r2 r3]", 5},
		{"desc", db.RunFilter{SessionID: "s1", SortOrder: "DESC"}, "[r3 r2 r1 r0]", 4},
		{"created_at then run_id", db.RunFilter{SessionID: "s1", SortBy: "created_at"}, "[r1 r2 r3 r0]", 4},
		{"updated_at desc", db.RunFilter{SessionID: "s1", SortBy: "updated_at", SortOrder: "desc"}, "[r1 r0 r3 r2]", 4},
		{"agent", db.RunFilter{AgentID: "a"}, "[x0 r0 r2]", 3},
		{"team", db.RunFilter{TeamID: "t"}, "[r1]", 1},
		{"workflow", db.RunFilter{WorkflowID: "w"}, "[r3]", 1},
		{"user", db.RunFilter{UserID: "u"}, "[r3]", 1},
		{"parent", db.RunFilter{ParentRunID: "r1"}, "[r2]", 1},
		{"run type", db.RunFilter{SessionID: "s1", RunType: run.TypeAgent}, "[r0 r2]", 2},
		{"statuses", db.RunFilter{SessionID: "s1", Statuses: []run.Status{run.StatusError, run.StatusPaused}}, "[r1 r2]", 2},
		{"page 2", db.RunFilter{SessionID: "s1", Limit: 3, Page: 2}, "[r3]", 4},
		{"page past the end", db.RunFilter{SessionID: "s1", Limit: 3, Page: 3}, "[]", 4},
		{"unknown session", db.RunFilter{SessionID: "zz"}, "[]", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := tt.f
			if f.Limit == 0 {
				f.Limit = 10
			}
			if f.Page == 0 {
				f.Page = 1
			}
			f.WithTotal = true
			got, total, err := d.GetRuns(ctx, f)
			if err != nil {
				t.Fatal(err)
			}
			if runIDs(got) != tt.want || total != tt.wantTotal {
				t.Errorf("got %s total %d, want %s total %d", runIDs(got), total, tt.want, tt.wantTotal)
			}
			f.WithTotal = false
			if _, total, _ := d.GetRuns(ctx, f); total != -1 {
				t.Errorf("total without WithTotal = %d, want -1", total)
			}
		})
	}
}

func TestGetRuns_RequiresLimit(t *testing.T) {
	t.Parallel()
	if _, _, err := newDB(t).GetRuns(context.Background(), db.RunFilter{Page: 1}); !errors.Is(err, db.ErrInvalidFilter) {
		t.Fatalf("err = %v, want ErrInvalidFilter", err)
	}
}

func TestHistoryRuns_LastContextRunsOldestFirst(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	ctx := context.Background()
	mustSession(t, ctx, d, session("s1", ""))
	mustSession(t, ctx, d, session("s2", ""))
	for _, r := range []*db.Run{
		runRow("h0", "s1", run.StatusCompleted),
		runRow("h1", "s1", run.StatusError),
		runRow("h2", "s1", run.StatusCompleted),
		runRow("h3", "s1", run.StatusPaused),
		runRow("h4", "s1", run.StatusCancelled),
		{RunID: "h5", SessionID: "s1", RunType: run.TypeAgent, AgentID: "agent-1", ParentRunID: "h6", Status: run.StatusCompleted, RunData: json.RawMessage(`{}`)},
		{RunID: "h6", SessionID: "s1", RunType: run.TypeTeam, TeamID: "team-1", Status: run.StatusCompleted, RunData: json.RawMessage(`{}`)},
		runRow("h7", "s1", run.StatusRunning),
		runRow("o0", "s2", run.StatusCompleted),
	} {
		mustRun(t, ctx, d, r)
	}
	tests := []struct {
		name string
		q    db.HistoryQuery
		want string
	}{
		{"all context runs", db.HistoryQuery{SessionID: "s1", Limit: 10}, "[h0 h2 h6 h7]"},
		{"last two", db.HistoryQuery{SessionID: "s1", Limit: 2}, "[h6 h7]"},
		{"agent only", db.HistoryQuery{SessionID: "s1", AgentID: "agent-1", Limit: 10}, "[h0 h2 h7]"},
		{"team only", db.HistoryQuery{SessionID: "s1", TeamID: "team-1", Limit: 10}, "[h6]"},
		{"empty session", db.HistoryQuery{SessionID: "none", Limit: 10}, "[]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := d.HistoryRuns(ctx, tt.q)
			if err != nil {
				t.Fatal(err)
			}
			if runIDs(got) != tt.want {
				t.Errorf("got %s, want %s", runIDs(got), tt.want)
			}
		})
	}
}

// The caller's input is copied; returned run_data is shared and read-only
// (db/memory's doc), so only appends and the run_index pointer are checked
// on the way out.
func TestRuns_NoAliasing(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	ctx := context.Background()
	mustSession(t, ctx, d, session("s1", ""))
	in := runRow("r1", "s1", run.StatusCompleted)
	out := mustRun(t, ctx, d, in)
	in.RunData[2] = 'X'
	_ = append(out.RunData, 'Y')
	*out.RunIndex = 42
	got, err := d.GetRun(ctx, "r1")
	if err != nil {
		t.Fatal(err)
	}
	if string(got.RunData) != `{"run_id":"r1","content":"answer"}` || *got.RunIndex != 0 {
		t.Fatalf("stored run changed through a caller's slice: %s index %d", got.RunData, *got.RunIndex)
	}
	list, _, _ := d.GetRuns(ctx, db.RunFilter{Limit: 1, Page: 1})
	_ = append(list[0].RunData, 'Z')
	*list[0].RunIndex = 7
	if got, _ := d.GetRun(ctx, "r1"); string(got.RunData) != `{"run_id":"r1","content":"answer"}` || *got.RunIndex != 0 {
		t.Fatal("stored run changed through a listed row")
	}
}

// The session's history order is kept as runs are stored with explicit
// run_index values out of order, updated (a new value replaces the stored
// one) and deleted.
func TestHistoryRuns_OrderSurvivesOutOfOrderUpdatesAndDeletes(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	ctx := context.Background()
	mustSession(t, ctx, d, session("s1", ""))
	for _, x := range []struct {
		id  string
		idx int64
	}{{"r5", 5}, {"r1", 1}, {"r3", 3}, {"r2", 2}, {"r4", 4}} {
		r := runRow(x.id, "s1", run.StatusCompleted)
		idx := x.idx
		r.RunIndex = &idx
		mustRun(t, ctx, d, r)
	}
	check := func(limit int, want string) {
		t.Helper()
		got, err := d.HistoryRuns(ctx, db.HistoryQuery{SessionID: "s1", Limit: limit})
		if err != nil {
			t.Fatal(err)
		}
		if runIDs(got) != want {
			t.Errorf("limit %d: got %s, want %s", limit, runIDs(got), want)
		}
	}
	check(10, "[r1 r2 r3 r4 r5]")
	check(2, "[r4 r5]")
	mustRun(t, ctx, d, runRow("r4", "s1", run.StatusError)) // leaves history
	check(2, "[r3 r5]")
	mustRun(t, ctx, d, runRow("r4", "s1", run.StatusCompleted)) // back, in its place
	check(2, "[r4 r5]")
	if err := d.DeleteRun(ctx, "r5"); err != nil {
		t.Fatal(err)
	}
	check(2, "[r3 r4]")
	next := mustRun(t, ctx, d, runRow("r6", "s1", run.StatusCompleted))
	if *next.RunIndex != 5 {
		t.Errorf("run_index after deleting the last run = %d, want 5", *next.RunIndex)
	}
	check(3, "[r3 r4 r6]")
}

// Runs given out of run_index order (an import, a copy from another store)
// still come back in history order; the newest run is appended, the others
// inserted in place, and run_index assignment follows the highest.
func TestHistoryRuns_OutOfOrderInserts(t *testing.T) {
	d := newDB(t)
	ctx := context.Background()
	mustSession(t, ctx, d, session("s1", ""))
	for _, c := range []struct {
		id  string
		idx int64
	}{{"c", 2}, {"a", 0}, {"d", 5}, {"b", 1}} {
		r := runRow(c.id, "s1", run.StatusCompleted)
		r.RunIndex = &c.idx
		mustRun(t, ctx, d, r)
	}
	next := mustRun(t, ctx, d, runRow("e", "s1", run.StatusCompleted))
	if *next.RunIndex != 6 {
		t.Fatalf("new run's run_index %d, want 6", *next.RunIndex)
	}
	rows, err := d.HistoryRuns(ctx, db.HistoryQuery{SessionID: "s1", Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range rows {
		got = append(got, fmt.Sprintf("%s:%d", r.RunID, *r.RunIndex))
	}
	if s := strings.Join(got, " "); s != "a:0 b:1 c:2 d:5 e:6" {
		t.Fatalf("history order %s", s)
	}
	refs, err := d.HistoryRefs(ctx, db.HistoryQuery{SessionID: "s1", Limit: 2})
	if err != nil || len(refs) != 2 || refs[0].RunID != "d" || refs[1].RunID != "e" {
		t.Fatalf("last two refs %+v, %v", refs, err)
	}
}
