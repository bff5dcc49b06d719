package db_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/dbtest/testdbs"
	"github.com/agentryhq/agentry/run"
)

// RunStatuses and RunIDsInStatus answer the same on every driver, with
// the ability (SQL drivers: no run_data read) and without it (the front's
// fallback over whole rows): statuses of the runs that exist, and the ids
// of runs in the statuses asked for, in run_id order, a keyset page at a
// time.
func TestRunStatuses_EveryDriverAndTheFallbackAnswerTheSame(t *testing.T) {
	testdbs.Each(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		want := map[string]run.Status{}
		for i, st := range []run.Status{run.StatusPending, run.StatusRunning, run.StatusCompleted, run.StatusPending, run.StatusError, run.StatusRunning} {
			id := fmt.Sprintf("r%d", i)
			data, _ := json.Marshal(map[string]string{"run_id": id, "status": string(st)})
			if _, err := d.UpsertSession(ctx, &db.Session{SessionID: "s", SessionType: run.TypeAgent}); err != nil {
				t.Fatal(err)
			}
			if _, err := d.UpsertRun(ctx, &db.Run{RunID: id, SessionID: "s", RunType: run.TypeAgent, Status: st, RunData: data}); err != nil {
				t.Fatal(err)
			}
			want[id] = st
		}
		plain := db.New("plain", plainDriver{d.Driver()})
		for name, d := range map[string]*db.DB{"driver": d, "fallback": plain} {
			got, err := d.RunStatuses(ctx, []string{"r0", "r2", "r4", "missing"})
			if err != nil {
				t.Fatal(err)
			}
			if exp := map[string]run.Status{"r0": want["r0"], "r2": want["r2"], "r4": want["r4"]}; !maps.Equal(got, exp) {
				t.Errorf("%s: RunStatuses = %v, want %v", name, got, exp)
			}
			var ids []string
			after := ""
			for {
				page, err := d.RunIDsInStatus(ctx, []run.Status{run.StatusPending, run.StatusRunning}, after, 3)
				if err != nil {
					t.Fatal(err)
				}
				ids = append(ids, page...)
				if len(page) < 3 {
					break
				}
				after = page[len(page)-1]
			}
			if exp := []string{"r0", "r1", "r3", "r5"}; !slices.Equal(ids, exp) {
				t.Errorf("%s: RunIDsInStatus pages = %v, want %v", name, ids, exp)
			}
		}
	})
}
