package memory_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"unsafe"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/run"
)

// Reads share the stored run_data instead of copying it, and a reader that
// appends to it cannot change what the store holds.
func TestHistoryRuns_ShareRunDataWithoutCopies(t *testing.T) {
	d := newDB(t)
	ctx := context.Background()
	mustSession(t, ctx, d, session("s1", ""))
	mustRun(t, ctx, d, runRow("a", "s1", run.StatusCompleted))
	q := db.HistoryQuery{SessionID: "s1", Limit: 3}
	first, err := d.HistoryRuns(ctx, q)
	if err != nil || len(first) != 1 {
		t.Fatalf("HistoryRuns: %v %v", first, err)
	}
	second, err := d.HistoryRuns(ctx, q)
	if err != nil || len(second) != 1 {
		t.Fatalf("HistoryRuns: %v %v", second, err)
	}
	if unsafe.SliceData(first[0].RunData) != unsafe.SliceData(second[0].RunData) {
		t.Fatal("each read copied run_data")
	}
	want := string(first[0].RunData)
	_ = append(first[0].RunData, `garbage`...)
	*first[0].RunIndex = 99
	got, err := d.GetRun(ctx, "a")
	if err != nil || string(got.RunData) != want || *got.RunIndex != 0 {
		t.Fatalf("store changed through a reader: %s index %d, %v", got.RunData, *got.RunIndex, err)
	}
	// An update stores a new value; the earlier read keeps the old bytes.
	upd := runRow("a", "s1", run.StatusCompleted)
	upd.RunData = json.RawMessage(`{"run_id":"a","content":"changed"}`)
	mustRun(t, ctx, d, upd)
	if string(second[0].RunData) != want {
		t.Fatalf("an update rewrote bytes a reader holds: %s", second[0].RunData)
	}
	if got, _ := d.GetRun(ctx, "a"); string(got.RunData) != string(upd.RunData) {
		t.Fatalf("update lost: %s", got.RunData)
	}
}

// Rows encoded by RunFromOutput skip the JSON scan; a row whose run_data was
// replaced afterwards is checked again and refused when invalid.
func TestUpsertRun_CheckedJSONOnlyForEncodedRows(t *testing.T) {
	d := newDB(t)
	ctx := context.Background()
	mustSession(t, ctx, d, session("s1", ""))
	o := &run.Output{RunID: "r1", SessionID: "s1", AgentID: "agent-1", Status: run.StatusCompleted, Content: "hi"}
	row, err := db.RunFromOutput(o)
	if err != nil || !row.CheckedJSON() {
		t.Fatalf("RunFromOutput: checked=%v err=%v", row != nil && row.CheckedJSON(), err)
	}
	saved := mustRun(t, ctx, d, row)
	if string(saved.RunData) != string(row.RunData) {
		t.Fatalf("stored %s, want %s", saved.RunData, row.RunData)
	}
	bad, _ := db.RunFromOutput(&run.Output{RunID: "r2", SessionID: "s1", AgentID: "agent-1", Status: run.StatusCompleted})
	bad.RunData = json.RawMessage(`{"run_id":`)
	if bad.CheckedJSON() {
		t.Fatal("replaced run_data still reports checked")
	}
	if _, err := d.UpsertRun(ctx, bad); !errors.Is(err, db.ErrInvalidRecord) {
		t.Fatalf("invalid replaced run_data: %v, want ErrInvalidRecord", err)
	}
}

// A run encoded by db.RunFromOutput is stored as it is: its bytes are
// immutable by contract (CheckedJSON), so the store keeps them instead of a
// copy, and a reader's append still cannot reach the store.
func TestSaveRun_KeepsEncodedRunDataWithoutCopy(t *testing.T) {
	d := newDB(t)
	ctx := context.Background()
	out := &run.Output{RunID: "a", SessionID: "s1", AgentID: "ag", Status: run.StatusCompleted, Content: "hi"}
	row, err := db.RunFromOutput(out)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := d.SaveRun(ctx, session("s1", ""), row); err != nil {
		t.Fatal(err)
	}
	got, err := d.GetRun(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	if unsafe.SliceData(got.RunData) != unsafe.SliceData(row.RunData) {
		t.Fatal("the store copied run_data that RunFromOutput encoded")
	}
	want := string(got.RunData)
	_ = append(got.RunData, `garbage`...)
	again, err := d.GetRun(ctx, "a")
	if err != nil || string(again.RunData) != want {
		t.Fatalf("store changed through a reader: %s, %v", again.RunData, err)
	}
}
