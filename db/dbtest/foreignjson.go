package dbtest

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/internal/sqlstore"
)

// foreignJSON are values another writer may leave in a JSON column: text
// that is no JSON (SQLite and MySQL keep it; Postgres's JSONB refuses it,
// and the shape is then skipped), JSON of another type than the one Agno
// writes (every database keeps it) and SQL NULL.
var foreignJSON = []string{`'{"broken'`, `'"a string"'`, `'42'`, `'[1, 2]'`, `NULL`}

// forEachForeignJSON stores each foreignJSON shape in column of the row
// keyed by id (seeded afresh by seed under a prefix per shape) and calls
// check, which lists the rows: the list must hold the healthy rows and
// list or report the foreign one, never fail as a whole.
func forEachForeignJSON(t *testing.T, d *db.DB, table func(sqlstore.Tables) string, key, column string,
	seed func(prefix string) (foreign string), check func(prefix, foreign, shape string)) {
	t.Helper()
	for i, shape := range foreignJSON {
		prefix := fmt.Sprintf("j%d", i)
		foreign := seed(prefix)
		if !foreignSet(t, d, table, key, foreign, column+" = "+shape) {
			continue
		}
		check(prefix, foreign, shape)
		// Lists that cross prefixes see one foreign row at a time.
		foreignSet(t, d, table, key, foreign, column+" = NULL")
	}
}

func evalsTable(t sqlstore.Tables) string        { return t.Evals }
func schedulesTable(t sqlstore.Tables) string    { return t.Schedules }
func scheduleRunsTable(t sqlstore.Tables) string { return t.ScheduleRuns }
func approvalsTable(t sqlstore.Tables) string    { return t.Approvals }
func componentsTable(t sqlstore.Tables) string   { return t.Components }
func tracesTable(t sqlstore.Tables) string       { return t.Traces }
func spansTable(t sqlstore.Tables) string        { return t.Spans }
func knowledgeTable(t sqlstore.Tables) string    { return t.Knowledge }
func learningsTable(t sqlstore.Tables) string    { return t.Learnings }
func metricsTable(t sqlstore.Tables) string      { return t.Metrics }

// Lists of the control-plane tables (evals, schedules, approvals,
// components, traces, knowledge, learnings, metrics) with a row whose JSON
// column another writer left broken or of the wrong type: the list serves
// the others and reports the row it cannot decode.
var foreignJSONTests = map[string]func(t *testing.T, d *db.DB){
	"ListEvalRuns_ForeignJSONDoesNotFailTheList": func(t *testing.T, d *db.DB) {
		for _, col := range []string{"eval_data", "eval_input"} {
			forEachForeignJSON(t, d, evalsTable, "run_id", col, func(p string) string {
				for _, id := range []string{"a", "b", "c"} {
					mustEval(t, d, db.EvalRun{RunID: col + p + id, AgentID: col + p, EvalInput: json.RawMessage(`{"q":1}`)})
				}
				return col + p + "b"
			}, func(p, foreign, shape string) {
				got, _, err := d.ListEvalRuns(bg, db.EvalFilter{AgentID: col + p, Limit: 10, Page: 1})
				wantListed(t, "ListEvalRuns "+col+" "+shape, evalIDs(got), err, foreign, col+p+"a", col+p+"c")
			})
		}
	},
	"ListSchedules_ForeignJSONDoesNotFailTheList": func(t *testing.T, d *db.DB) {
		forEachForeignJSON(t, d, schedulesTable, "id", "payload", func(p string) string {
			for i, id := range []string{"a", "b", "c"} {
				if _, err := d.CreateSchedule(bg, schedule(p+id, p+id, p, int64(100+i))); err != nil {
					t.Fatal(err)
				}
			}
			return p + "b"
		}, func(p, foreign, shape string) {
			got, _, err := d.ListSchedules(bg, db.ScheduleFilter{UserID: p, Limit: 10, Page: 1})
			ids := make([]string, len(got))
			for i, s := range got {
				ids[i] = s.ID
			}
			wantListed(t, "ListSchedules "+shape, ids, err, foreign, p+"a", p+"c")
		})
	},
	"ListScheduleRuns_ForeignJSONDoesNotFailTheList": func(t *testing.T, d *db.DB) {
		for _, col := range []string{"input", "output", "requirements"} {
			forEachForeignJSON(t, d, scheduleRunsTable, "id", col, func(p string) string {
				sch := col + p
				if _, err := d.CreateSchedule(bg, schedule(sch, sch, "u", 100)); err != nil {
					t.Fatal(err)
				}
				for i, id := range []string{"a", "b", "c"} {
					if _, err := d.CreateScheduleRun(bg, &db.ScheduleRun{ID: sch + id, ScheduleID: sch, Status: db.ScheduleRunRunning,
						Input: json.RawMessage(`{"m":1}`), CreatedAt: int64(60 + i)}); err != nil {
						t.Fatal(err)
					}
				}
				return sch + "b"
			}, func(p, foreign, shape string) {
				got, _, err := d.ListScheduleRuns(bg, db.ScheduleRunFilter{ScheduleID: col + p, Limit: 10, Page: 1})
				ids := make([]string, len(got))
				for i, r := range got {
					ids[i] = r.ID
				}
				wantListed(t, "ListScheduleRuns "+col+" "+shape, ids, err, foreign, col+p+"a", col+p+"c")
			})
		}
	},
	"ListApprovals_ForeignJSONDoesNotFailTheList": func(t *testing.T, d *db.DB) {
		for _, col := range []string{"tool_args", "requirements", "context", "resolution_data"} {
			forEachForeignJSON(t, d, approvalsTable, "id", col, func(p string) string {
				for i, id := range []string{"a", "b", "c"} {
					a := approval(col+p+id, col+p, "u", int64(100+i))
					noErr(t, d.CreateApproval(bg, a))
				}
				return col + p + "b"
			}, func(p, foreign, shape string) {
				got, _, err := d.ListApprovals(bg, db.ApprovalFilter{RunID: col + p, Limit: 10, Page: 1})
				ids := make([]string, len(got))
				for i, a := range got {
					ids[i] = a.ID
				}
				wantListed(t, "ListApprovals "+col+" "+shape, ids, err, foreign, col+p+"c", col+p+"a")
			})
		}
	},
	"ListComponents_ForeignJSONDoesNotFailTheList": func(t *testing.T, d *db.DB) {
		forEachForeignJSON(t, d, componentsTable, "component_id", "metadata", func(p string) string {
			for _, id := range []string{"a", "b", "c"} {
				if _, _, err := d.CreateComponent(bg, &db.Component{ComponentID: p + id, ComponentType: db.ComponentAgent, Name: p + id},
					&db.ComponentConfig{Config: json.RawMessage(`{"model":"x:y"}`)}, nil); err != nil {
					t.Fatal(err)
				}
			}
			return p + "b"
		}, func(p, foreign, shape string) {
			got, _, err := d.ListComponents(bg, db.ComponentFilter{Limit: 100, Page: 1})
			var ids []string
			for _, c := range got {
				if len(c.ComponentID) > len(p) && c.ComponentID[:len(p)] == p {
					ids = append(ids, c.ComponentID)
				}
			}
			wantListed(t, "ListComponents "+shape, ids, err, foreign, p+"c", p+"a")
		})
	},
	// A config is a JSON object: any other shape is a corrupt row on every
	// database, which ListConfigs leaves out and reports.
	"ListConfigs_ForeignJSONDoesNotFailTheList": func(t *testing.T, d *db.DB) {
		if _, _, err := d.CreateComponent(bg, &db.Component{ComponentID: "c", ComponentType: db.ComponentAgent, Name: "c"},
			&db.ComponentConfig{Config: json.RawMessage(`{"model":"x:y"}`)}, nil); err != nil {
			t.Fatal(err)
		}
		for range 2 {
			if _, err := d.AddConfig(bg, "c", &db.ComponentConfig{Config: json.RawMessage(`{"model":"x:z"}`)}, nil); err != nil {
				t.Fatal(err)
			}
		}
		for _, shape := range foreignJSON {
			st, _ := sqlstore.FromDB(d)
			dl := st.SQLDialect()
			q := dl.Bind(fmt.Sprintf("UPDATE %s SET config = %s WHERE component_id = ? AND version = ?", dl.Table(st.Tables().ComponentConfigs), shape))
			if _, err := st.SQL().ExecContext(bg, q, "c", 2); err != nil {
				t.Logf("%s refused %s: %v", dl.Name, q, err)
				continue
			}
			got, err := d.ListConfigs(bg, "c")
			var vs []string
			for _, c := range got {
				vs = append(vs, fmt.Sprintf("c v%d", c.Version))
			}
			wantReported(t, "ListConfigs "+shape, vs, err, "c v2", "c v3", "c v1")
		}
	},
	"ListTraces_UndecodableRowDoesNotFailTheList": func(t *testing.T, d *db.DB) {
		t0 := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
		var rows []db.Trace
		for i, id := range []string{"ta", "tb", "tc"} {
			rows = append(rows, traceRow(id, "u", "s", t0.Add(time.Duration(i)*time.Second), 5))
		}
		spans := []db.Span{spanRow("ta", "sa", "", "OK", t0), spanRow("ta", "sb", "sa", "OK", t0.Add(time.Millisecond)),
			spanRow("ta", "sc", "sa", "OK", t0.Add(2*time.Millisecond))}
		noErr(t, d.WriteTraces(bg, rows, spans))
		foreignSet(t, d, tracesTable, "trace_id", "tb", "start_time = 'yesterday'")
		got, _, err := d.ListTraces(bg, db.TraceFilter{Limit: 10, Page: 1})
		wantReported(t, "ListTraces", traceIDs(got), err, "tb", "tc", "ta")
		// The exporter writing the trace again replaces the row it cannot read.
		noErr(t, d.WriteTraces(bg, []db.Trace{traceRow("tb", "u", "s", t0.Add(time.Second), 5)}, nil))
		got, _, err = d.ListTraces(bg, db.TraceFilter{Limit: 10, Page: 1})
		noErr(t, err)
		equal(t, "ListTraces after a rewrite", traceIDs(got), []string{"tc", "tb", "ta"})
		for _, shape := range foreignJSON {
			if !foreignSet(t, d, spansTable, "span_id", "sb", "attributes = "+shape) {
				continue
			}
			sp, err := d.Spans(bg, "ta")
			ids := make([]string, len(sp))
			for i, s := range sp {
				ids[i] = s.SpanID
			}
			wantListed(t, "Spans "+shape, ids, err, "sb", "sa", "sc")
		}
		foreignSet(t, d, spansTable, "span_id", "sb", "end_time = 'later'")
		sp, err := d.Spans(bg, "ta")
		ids := make([]string, len(sp))
		for i, s := range sp {
			ids[i] = s.SpanID
		}
		wantReported(t, "Spans with a broken end_time", ids, err, "sb", "sa", "sc")
	},
	"ListKnowledgeContents_ForeignJSONDoesNotFailTheList": func(t *testing.T, d *db.DB) {
		forEachForeignJSON(t, d, knowledgeTable, "id", "metadata", func(p string) string {
			for i, id := range []string{"a", "b", "c"} {
				if _, err := d.InsertKnowledgeContent(bg, &db.KnowledgeContent{ID: p + id, Name: p + id, Metadata: json.RawMessage(`{"k":1}`),
					CreatedAt: int64(100 + i)}); err != nil {
					t.Fatal(err)
				}
			}
			return p + "b"
		}, func(p, foreign, shape string) {
			got, _, err := d.ListKnowledgeContents(bg, db.KnowledgeFilter{Limit: 100, Page: 1})
			var ids []string
			for _, c := range got {
				if c.ID[:len(p)] == p {
					ids = append(ids, c.ID)
				}
			}
			wantListed(t, "ListKnowledgeContents "+shape, ids, err, foreign, p+"c", p+"a")
		})
	},
	"ListLearnings_ForeignJSONDoesNotFailTheList": func(t *testing.T, d *db.DB) {
		for _, col := range []string{"content", "metadata"} {
			forEachForeignJSON(t, d, learningsTable, "learning_id", col, func(p string) string {
				for _, id := range []string{"a", "b", "c"} {
					mustLearning(t, d, db.Learning{LearningID: col + p + id, UserID: col + p, Metadata: json.RawMessage(`{"m":1}`)})
				}
				return col + p + "b"
			}, func(p, foreign, shape string) {
				got, _, err := d.ListLearnings(bg, db.LearningFilter{UserID: col + p, Limit: 10, Page: 1})
				var ids []string
				for _, l := range got {
					ids = append(ids, l.LearningID)
				}
				wantListed(t, "ListLearnings "+col+" "+shape, ids, err, foreign, col+p+"a", col+p+"c")
			})
		}
		// A REAL updated_at (Python's time.time()) makes MAX a REAL.
		foreignSet(t, d, learningsTable, "learning_id", "contentj0a", "updated_at = 1733000000.5")
		users, _, err := d.LearningUsers(bg, "", "", 10, 1)
		noErr(t, err)
		if len(users) == 0 {
			t.Fatal("LearningUsers found no users")
		}
	},
	"ListDailyMetrics_ForeignJSONDoesNotFailTheList": func(t *testing.T, d *db.DB) {
		md, ok := d.Driver().(db.MetricsDriver)
		if !ok {
			t.Fatal("the driver stores no metrics")
		}
		for _, col := range []string{"token_metrics", "model_metrics"} {
			forEachForeignJSON(t, d, metricsTable, "id", col, func(p string) string {
				var rows []db.DailyMetrics
				for i, id := range []string{"a", "b", "c"} {
					rows = append(rows, db.DailyMetrics{ID: col + p + id, UserID: col + p, Date: fmt.Sprintf("2024-12-0%d", i+1),
						AggregationPeriod: db.DailyMetricsPeriod, TokenMetrics: json.RawMessage(`{}`), ModelMetrics: json.RawMessage(`[]`)})
				}
				noErr(t, md.UpsertDailyMetrics(bg, rows))
				return col + p + "b"
			}, func(p, foreign, shape string) {
				got, err := d.ListDailyMetrics(bg, db.MetricsFilter{UserID: col + p})
				var ids []string
				for _, m := range got {
					ids = append(ids, m.ID)
				}
				wantListed(t, "ListDailyMetrics "+col+" "+shape, ids, err, foreign, col+p+"a", col+p+"c")
			})
		}
	},
}
