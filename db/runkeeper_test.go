package db_test

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"testing"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/memory"
	"github.com/agentryhq/agentry/run"
)

// ownedRows are a session and its run built for one save, as the agent
// builds them.
func ownedRows(t *testing.T, i int, idx *int64) (*db.Session, *db.Run) {
	t.Helper()
	id := string(rune('a'+i%26)) + "-" + string(rune('0'+i/26))
	r, err := db.RunFromOutput(&run.Output{RunID: "r" + id, SessionID: "s", AgentID: "ag", Status: run.StatusCompleted,
		Content: "answer " + id, CreatedAt: 100, UpdatedAt: int64(100 + i)})
	if err != nil {
		t.Fatal(err)
	}
	r.RunIndex = idx
	s := &db.Session{SessionID: "s", SessionType: "agent", AgentID: "ag",
		AgentData: json.RawMessage(`{"name":"x"}`), Summary: json.RawMessage(fmt.Sprintf(`{"summary":"turn %d"}`, i)),
		CreatedAt: 100, UpdatedAt: int64(100 + i)}
	return s, r
}

// SaveRunOwned stores what SaveRun stores, and nothing the caller held
// before the save can change the stored rows (the handed-over rows' inner
// pointers: run_index, JSON columns). The rows it returns may be the
// store's own, so later saves must replace stored rows, not change them:
// every returned row still reads as it was returned. Runs are saved across
// several of the driver's blocks of run_index slots, so each stored run
// must keep its own index.
func TestSaveRunOwned_StoresWhatSaveRunStoresUnaliased(t *testing.T) {
	t.Parallel()
	ctx := db.WithUserScope(context.Background(), "u1")
	owned, copied := db.New("", memory.New()), db.New("", memory.New())
	const n = 150
	type returned struct {
		s            *db.Session
		r            *db.Run
		sText, rText string
		idx          int64
	}
	var got []returned
	for i := range n {
		var idx *int64
		if i%7 == 3 { // some runs bring their run_index
			v := int64(i)
			idx = &v
		}
		s, r := ownedRows(t, i, idx)
		s2, r2 := ownedRows(t, i, idx)
		data := s.AgentData // the caller's bytes; s itself is the store's after the save
		so, ro, err := owned.SaveRunOwned(ctx, s, r)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := copied.SaveRun(ctx, s2, r2); err != nil {
			t.Fatal(err)
		}
		got = append(got, returned{so, ro, fmt.Sprintf("%+v", *so), fmt.Sprintf("%+v", *ro), *ro.RunIndex})
		// The caller's pointers are written over.
		if idx != nil {
			*idx = -1
		}
		data[0] = 'X'
		if i%10 == 9 { // an earlier run is updated (a new status)
			s3, r3 := ownedRows(t, i-5, nil)
			r3.Status = run.StatusError
			s4, r4 := ownedRows(t, i-5, nil)
			r4.Status = run.StatusError
			if _, _, err := owned.SaveRunOwned(ctx, s3, r3); err != nil {
				t.Fatal(err)
			}
			if _, _, err := copied.SaveRun(ctx, s4, r4); err != nil {
				t.Fatal(err)
			}
		}
	}
	for i, g := range got {
		if now := fmt.Sprintf("%+v", *g.s); now != g.sText {
			t.Fatalf("save %d: the returned session changed after later saves:\n%s\n%s", i, g.sText, now)
		}
		if now := fmt.Sprintf("%+v", *g.r); now != g.rText || *g.r.RunIndex != g.idx {
			t.Fatalf("save %d: the returned run changed after later saves:\n%s\n%s", i, g.rText, now)
		}
	}
	for i := range n {
		_, want := ownedRows(t, i, nil)
		got, err := owned.GetRun(ctx, want.RunID)
		if err != nil {
			t.Fatal(err)
		}
		ref, err := copied.GetRun(ctx, want.RunID)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, ref) {
			t.Fatalf("run %d: SaveRunOwned stored %+v (index %d), SaveRun %+v (index %d)", i, got, *got.RunIndex, ref, *ref.RunIndex)
		}
		if got.UserID != "u1" || got.RunIndex == nil || *got.RunIndex < 0 {
			t.Fatalf("run %d stored as %+v (index %v)", i, got, got.RunIndex)
		}
	}
	got2, err := owned.GetSession(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	ref, err := copied.GetSession(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got2, ref) || string(got2.AgentData) != `{"name":"x"}` || got2.UserID != "u1" {
		t.Fatalf("session: SaveRunOwned stored %+v, SaveRun %+v", got2, ref)
	}
}

// A session read with ReadOnlySession may be the store's own value: a
// later write replaces it and leaves the value read as it was.
func TestSessionHistoryRefs_ReadOnlySessionIsNotChangedByLaterWrites(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := db.New("", memory.New())
	s, r := ownedRows(t, 0, nil)
	if _, _, err := d.SaveRun(ctx, s, r); err != nil {
		t.Fatal(err)
	}
	q := db.HistoryQuery{SessionID: "s", Limit: 3, ReadOnlySession: true}
	read, refs, err := d.SessionHistoryRefs(ctx, q)
	if err != nil || len(refs) != 1 {
		t.Fatalf("read: %v, %d refs", err, len(refs))
	}
	before := fmt.Sprintf("%+v", *read)
	for i := 1; i < 5; i++ {
		s, r := ownedRows(t, i, nil)
		s.AgentData = json.RawMessage(`{"name":"changed"}`)
		s.UpdatedAt = int64(1000 + i)
		if _, _, err := d.SaveRunOwned(ctx, s, r); err != nil {
			t.Fatal(err)
		}
	}
	if after := fmt.Sprintf("%+v", *read); after != before {
		t.Fatalf("a read-only session changed after later writes:\n%s\n%s", before, after)
	}
	now, _, err := d.SessionHistoryRefs(ctx, q)
	if err != nil || string(now.AgentData) != `{"name":"changed"}` {
		t.Fatalf("the store did not take the writes: %v %s", err, now.AgentData)
	}
}

// A handed-over run is checked like any other: a run of another session or
// without run_data is refused and nothing is stored.
func TestSaveRunOwned_RefusesWhatSaveRunRefuses(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := db.New("", memory.New())
	s, r := ownedRows(t, 0, nil)
	r.SessionID = "other"
	if _, _, err := d.SaveRunOwned(ctx, s, r); err == nil {
		t.Fatal("a run of another session was saved")
	}
	s, r = ownedRows(t, 1, nil)
	r.RunData = nil
	if _, _, err := d.SaveRunOwned(ctx, s, r); err == nil {
		t.Fatal("a run without run_data was saved")
	}
	if _, err := d.GetSession(ctx, "s"); err == nil {
		t.Fatal("a refused save stored its session")
	}
}
