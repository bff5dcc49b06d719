package migrate_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/migrate"
	"github.com/agentryhq/agentry/migrate/migratetest"
)

// A Postgres json column keeps an escaped surrogate without its pair
// (Python's json.dumps writes a lone surrogate so), which jsonb refuses: the
// 2.3.0 conversion of the runs column and the copy of the batch holding
// such a run failed, and every later Up failed the same way. Up keeps the
// column as json and records the run as a bad row; the other runs are
// copied. SQLite stores the run as it is.
func TestUp_UnpairedSurrogateInAPostgresJSONColumnIsABadRow(t *testing.T) {
	onEachBackend(t, []variant{variants[0], variants[2]}, func(t *testing.T, ctx context.Context, f *fixtureDB) {
		f.insert(t, []migratetest.Session{
			legacyAgentSession("a-sur", `[{"run_id": "run-s", "agent_id": "a1", "content": "cut \ud83d"}, {"run_id": "run-p", "agent_id": "a1", "content": "pair \ud83d\ude00 and \\ud800 as text"}]`),
			legacyAgentSession("b-ok", `[{"run_id": "run-b", "agent_id": "a1", "session_id": "b-ok"}]`),
		})
		binary := f.dialect == postgresName
		for i := range 2 {
			sum, err := f.manager(t).Up(ctx, "")
			if err != nil {
				t.Fatalf("Up #%d: %v", i+1, err)
			}
			if !binary {
				if sum.BadRowCount != 0 {
					t.Fatalf("Up #%d bad rows = %+v, want none", i+1, sum.BadRows)
				}
				continue
			}
			if sum.BadRowCount != 1 || len(sum.BadRows) != 1 || sum.BadRows[0].SessionID != "a-sur" || sum.BadRows[0].Position != 0 ||
				sum.BadRows[0].Kind != migrate.BadSurrogate {
				t.Fatalf("Up #%d bad rows = %+v, want run #0 of a-sur as %s", i+1, sum.BadRows, migrate.BadSurrogate)
			}
			if i == 0 && !slices.ContainsFunc(sum.Steps, func(s migrate.Step) bool {
				return s.Table == "agno_sessions" && s.To == "2.3.0" && slices.ContainsFunc(s.Actions, func(a string) bool { return strings.HasPrefix(a, "keep runs as JSON") })
			}) {
				t.Errorf("steps = %+v, want the runs column kept as JSON", sum.Steps)
			}
		}
		want := []string{"run-b", "run-p", "run-s"}
		if binary {
			want = []string{"run-b", "run-p"}
		}
		if got := keys(f.readRuns(t)); !slices.Equal(got, want) {
			t.Errorf("runs table holds %v, want %v", got, want)
		}
		if st := statusOf(t, f.manager(t), migrate.KindSessions); binary && st.UncopiedRuns != 1 {
			t.Errorf("status = %+v, want the run left in the legacy column counted", st)
		}
	})
}

// On MySQL/MariaDB a legacy runs column holding the runs as a JSON string
// (JSON text Agno wrote as a string) can hold an escaped lone surrogate,
// which MariaDB's json (its JSON_VALID check) refuses in run_data: the batch
// holding the run failed, and every later Up the same way. Up records the
// run as a bad row and copies the others.
func TestUp_UnpairedSurrogateInAMySQLStringEncodedColumnIsABadRow(t *testing.T) {
	onEachBackend(t, []variant{variants[5]}, func(t *testing.T, ctx context.Context, f *fixtureDB) {
		inner := `[{"run_id": "run-s", "agent_id": "a1", "content": "cut \ud83d"}, {"run_id": "run-p", "agent_id": "a1", "content": "pair \ud83d\ude00"}]`
		outer, err := json.Marshal(inner)
		if err != nil {
			t.Fatal(err)
		}
		f.insert(t, []migratetest.Session{
			legacyAgentSession("a-sur", string(outer)),
			legacyAgentSession("b-ok", `[{"run_id": "run-b", "agent_id": "a1", "session_id": "b-ok"}]`),
		})
		for i := range 2 {
			sum, err := f.manager(t).Up(ctx, "")
			if err != nil {
				t.Fatalf("Up #%d: %v", i+1, err)
			}
			if len(sum.BadRows) != 1 || sum.BadRows[0].SessionID != "a-sur" || sum.BadRows[0].Position != 0 || sum.BadRows[0].Kind != migrate.BadSurrogate {
				t.Fatalf("Up #%d bad rows = %+v, want run #0 of a-sur as %s", i+1, sum.BadRows, migrate.BadSurrogate)
			}
		}
		if got, want := keys(f.readRuns(t)), []string{"run-b", "run-p"}; !slices.Equal(got, want) {
			t.Errorf("runs table holds %v, want %v", got, want)
		}
	})
}

// Down writing back a session whose legacy column holds its runs as a JSON
// string with a lone surrogate escape (left there by Up as a bad row) wrote
// the merged array as JSON, which jsonb and MariaDB's json refuse: Down
// stopped part-way on it, every time. It writes the array as a JSON string,
// the form the column held it in.
func TestDown_WritesBackRunsTheJSONColumnRefusesAsAString(t *testing.T) {
	onEachBackend(t, []variant{variants[3], variants[5]}, func(t *testing.T, ctx context.Context, f *fixtureDB) {
		inner := `[{"run_id": "run-s", "agent_id": "a1", "content": "cut \ud83d"}, {"run_id": "run-p", "agent_id": "a1", "content": "v1"}]`
		outer, err := json.Marshal(inner)
		if err != nil {
			t.Fatal(err)
		}
		f.insert(t, []migratetest.Session{legacyAgentSession("a-sur", string(outer))})
		if _, err := f.manager(t).Up(ctx, ""); err != nil {
			t.Fatalf("Up: %v", err)
		}
		f.execArgs(t, "UPDATE "+f.table("agno_runs")+` SET run_data = ? WHERE run_id = 'run-p'`, `{"run_id": "run-p", "agent_id": "a1", "content": "v2"}`)
		if _, err := f.manager(t).Down(ctx, "2.5.6"); err != nil {
			t.Fatalf("Down: %v", err)
		}
		col := "runs"
		if f.dialect == postgresName {
			col = "runs::text"
		}
		var got string
		if err := f.db.QueryRowContext(ctx, "SELECT "+col+" FROM "+f.table("agno_sessions")+" WHERE session_id = 'a-sur'").Scan(&got); err != nil {
			t.Fatal(err)
		}
		var runs []map[string]any
		if err := json.Unmarshal([]byte(got), &runs); err != nil {
			var s string
			if err := json.Unmarshal([]byte(got), &s); err != nil || json.Unmarshal([]byte(s), &runs) != nil {
				t.Fatalf("legacy runs after Down = %s, want the runs as JSON or a JSON string of them", got)
			}
		}
		if len(runs) != 2 || runs[0]["run_id"] != "run-s" || runs[1]["run_id"] != "run-p" || runs[1]["content"] != "v2" {
			t.Errorf("legacy runs after Down = %v, want run-s as it was, then run-p as the runs table held it", runs)
		}
	})
}
