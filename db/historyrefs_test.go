package db_test

import (
	"context"
	"testing"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/memory"
	"github.com/agentryhq/agentry/run"
)

// hiddenAbilities is the in-memory driver seen only through db.Driver: its
// optional abilities (HistoryRefReader among them) are hidden.
type hiddenAbilities struct{ db.Driver }

// HistoryRefs returns what HistoryRuns returns, reduced to refs, whether the
// driver has the ability or the front takes the refs from its rows.
func TestHistoryRefs_MatchHistoryRuns(t *testing.T) {
	t.Parallel()
	for name, drv := range map[string]db.Driver{"ability": memory.New(), "from rows": hiddenAbilities{memory.New()}} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			d := db.New("", drv)
			ctx := context.Background()
			for i, id := range []string{"r1", "r2", "r3", "r4"} {
				row, err := db.RunFromOutput(&run.Output{RunID: id, SessionID: "s", AgentID: "a", Status: run.StatusCompleted,
					Content: id, CreatedAt: int64(100 + i), UpdatedAt: int64(100 + i)})
				if err != nil {
					t.Fatal(err)
				}
				if _, _, err := d.SaveRun(ctx, &db.Session{SessionID: "s", SessionType: run.TypeAgent, AgentID: "a"}, row); err != nil {
					t.Fatal(err)
				}
			}
			q := db.HistoryQuery{SessionID: "s", AgentID: "a", Limit: 3}
			rows, err := d.HistoryRuns(ctx, q)
			if err != nil {
				t.Fatal(err)
			}
			refs, err := d.HistoryRefs(ctx, q)
			if err != nil {
				t.Fatal(err)
			}
			if len(refs) != 3 || len(rows) != 3 {
				t.Fatalf("%d refs, %d rows, want 3", len(refs), len(rows))
			}
			for i := range rows {
				if refs[i].RunID != rows[i].RunID || refs[i].UpdatedAt != rows[i].UpdatedAt || string(refs[i].RunData) != string(rows[i].RunData) {
					t.Errorf("ref %d = %s %d, row %s %d", i, refs[i].RunID, refs[i].UpdatedAt, rows[i].RunID, rows[i].UpdatedAt)
				}
			}
			if refs[0].RunID != "r2" || refs[2].RunID != "r4" {
				t.Fatalf("refs %s..%s, want the last three oldest first", refs[0].RunID, refs[2].RunID)
			}
			if _, err := d.HistoryRefs(ctx, db.HistoryQuery{SessionID: "s"}); err == nil {
				t.Fatal("a query without a limit was accepted")
			}
		})
	}
}
