package dbtest

import (
	"encoding/json"
	"testing"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/run"
)

// RunSQL runs the behaviours specific to the SQL drivers (sqlite, postgres,
// mysql): the runs table's foreign key to sessions. Other drivers need not
// pass it.
func RunSQL(t *testing.T, open Opener) {
	t.Helper()
	for name, fn := range joinTests(sqlTests, foreignRowTests, foreignShapeTests, foreignJSONTests, foreignNonFiniteTests) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			fn(t, open(t))
		})
	}
}

var sqlTests = map[string]func(t *testing.T, d *db.DB){
	"UpsertRun_UnknownSessionIsInvalidRecord": func(t *testing.T, d *db.DB) {
		_, err := d.UpsertRun(bg, &db.Run{RunID: "x", SessionID: "missing", RunType: run.TypeAgent, RunData: json.RawMessage(`{}`)})
		wantErr(t, err, db.ErrInvalidRecord)
	},
}

func joinTests(groups ...map[string]func(t *testing.T, d *db.DB)) map[string]func(t *testing.T, d *db.DB) {
	out := map[string]func(t *testing.T, d *db.DB){}
	for _, g := range groups {
		for k, v := range g {
			out[k] = v
		}
	}
	return out
}
