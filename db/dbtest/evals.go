package dbtest

import (
	"encoding/json"
	"testing"

	"github.com/agentryhq/agentry/db"
)

func mustEval(t *testing.T, d *db.DB, e db.EvalRun) *db.EvalRun {
	t.Helper()
	if e.EvalType == "" {
		e.EvalType = "reliability"
	}
	if e.EvalData == nil {
		e.EvalData = json.RawMessage(`{"eval_status":"PASSED","failed_tool_calls":[],"passed_tool_calls":["multiply"]}`)
	}
	out, err := d.CreateEvalRun(bg, &e)
	if err != nil {
		t.Fatalf("CreateEvalRun(%s): %v", e.RunID, err)
	}
	return out
}

func evalIDs(es []db.EvalRun) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.RunID
	}
	return out
}

var evalTests = map[string]func(t *testing.T, d *db.DB){
	"CreateEvalRun_RoundTrips": func(t *testing.T, d *db.DB) {
		in := db.EvalRun{RunID: "e1", EvalType: "accuracy", EvalData: json.RawMessage(`{"avg_score":8.5,"results":[{"score":8}]}`),
			EvalInput: json.RawMessage(`{"input":"2+2","expected_output":"4","num_iterations":2}`), Name: "sums", AgentID: "a",
			ModelID: "gpt", ModelProvider: "OpenAI", EvaluatedComponentName: "Adder", UserID: "u", CreatedAt: 100}
		mustEval(t, d, in)
		got, err := d.GetEvalRun(bg, "e1")
		noErr(t, err)
		equal(t, "fields", []string{got.EvalType, got.Name, got.AgentID, got.ModelID, got.ModelProvider, got.EvaluatedComponentName, got.UserID},
			[]string{"accuracy", "sums", "a", "gpt", "OpenAI", "Adder", "u"})
		var data, input map[string]any
		noErr(t, json.Unmarshal(got.EvalData, &data))
		noErr(t, json.Unmarshal(got.EvalInput, &input))
		equal(t, "avg_score", data["avg_score"], 8.5)
		equal(t, "expected_output", input["expected_output"], "4")
		equal(t, "created_at", got.CreatedAt, int64(100))
		_, err = d.CreateEvalRun(bg, &db.EvalRun{RunID: "e1", EvalType: "accuracy", EvalData: json.RawMessage(`{}`)})
		wantErr(t, err, db.ErrExists)
	},
	"CreateEvalRun_Validates": func(t *testing.T, d *db.DB) {
		for _, e := range []db.EvalRun{
			{EvalType: "accuracy", EvalData: json.RawMessage(`{}`)},
			{RunID: "x", EvalType: "vibes", EvalData: json.RawMessage(`{}`)},
			{RunID: "x", EvalType: "accuracy"},
			{RunID: "x", EvalType: "accuracy", EvalData: json.RawMessage(`{`)},
		} {
			_, err := d.CreateEvalRun(bg, &e)
			wantErr(t, err, db.ErrInvalidRecord)
		}
	},
	"ListEvalRuns_FiltersPagesAndSorts": func(t *testing.T, d *db.DB) {
		mustEval(t, d, db.EvalRun{RunID: "e1", EvalType: "accuracy", AgentID: "a", ModelID: "m1", UserID: "u1", CreatedAt: 1})
		mustEval(t, d, db.EvalRun{RunID: "e2", EvalType: "performance", TeamID: "t", ModelID: "m2", UserID: "u1", CreatedAt: 2})
		mustEval(t, d, db.EvalRun{RunID: "e3", EvalType: "reliability", AgentID: "a", ModelID: "m1", UserID: "u2", CreatedAt: 3})
		mustEval(t, d, db.EvalRun{RunID: "e4", EvalType: "agent_as_judge", WorkflowID: "w", CreatedAt: 4})
		cases := []struct {
			name  string
			f     db.EvalFilter
			want  []string
			total int
		}{
			{"all newest first", db.EvalFilter{}, []string{"e4", "e3", "e2", "e1"}, 4},
			{"agent", db.EvalFilter{AgentID: "a"}, []string{"e3", "e1"}, 2},
			{"team", db.EvalFilter{TeamID: "t"}, []string{"e2"}, 1},
			{"workflow", db.EvalFilter{WorkflowID: "w"}, []string{"e4"}, 1},
			{"model", db.EvalFilter{ModelID: "m1", SortOrder: db.Asc}, []string{"e1", "e3"}, 2},
			{"types", db.EvalFilter{EvalTypes: []string{"accuracy", "performance"}}, []string{"e2", "e1"}, 2},
			{"component type team", db.EvalFilter{ComponentType: "team"}, []string{"e2"}, 1},
			{"component type agent", db.EvalFilter{ComponentType: "agent"}, []string{"e3", "e1"}, 2},
			{"user", db.EvalFilter{UserID: "u1"}, []string{"e2", "e1"}, 2},
			{"page 2", db.EvalFilter{Limit: 3, Page: 2}, []string{"e1"}, 4},
		}
		for _, c := range cases {
			if c.f.Limit == 0 {
				c.f.Limit, c.f.Page = 10, 1
			}
			got, total, err := d.ListEvalRuns(bg, c.f)
			noErr(t, err)
			equal(t, c.name, evalIDs(got), c.want)
			equal(t, c.name+" total", total, c.total)
		}
		_, _, err := d.ListEvalRuns(bg, db.EvalFilter{Limit: 0, Page: 1})
		wantErr(t, err, db.ErrInvalidFilter)
		_, _, err = d.ListEvalRuns(bg, db.EvalFilter{Limit: 1, Page: 1, EvalTypes: []string{"nope"}})
		wantErr(t, err, db.ErrInvalidFilter)
	},
	"EvalRuns_ScopeHidesOtherAndUnownedRuns": func(t *testing.T, d *db.DB) {
		mustEval(t, d, db.EvalRun{RunID: "mine", UserID: "u1", CreatedAt: 1})
		mustEval(t, d, db.EvalRun{RunID: "theirs", UserID: "u2", CreatedAt: 2})
		mustEval(t, d, db.EvalRun{RunID: "unowned", CreatedAt: 3})
		u1 := db.WithUserScope(bg, "u1")
		got, total, err := d.ListEvalRuns(u1, db.EvalFilter{Limit: 10, Page: 1})
		noErr(t, err)
		equal(t, "scoped list", evalIDs(got), []string{"mine"})
		equal(t, "scoped total", total, 1)
		for _, id := range []string{"theirs", "unowned"} {
			_, err = d.GetEvalRun(u1, id)
			wantErr(t, err, db.ErrNotFound)
			_, err = d.RenameEvalRun(u1, id, "hijacked")
			wantErr(t, err, db.ErrNotFound)
		}
		noErr(t, d.DeleteEvalRuns(u1, "theirs", "unowned", "mine"))
		all, total, err := d.ListEvalRuns(bg, db.EvalFilter{Limit: 10, Page: 1, SortOrder: db.Asc})
		noErr(t, err)
		equal(t, "left after scoped delete", evalIDs(all), []string{"theirs", "unowned"})
		equal(t, "total", total, 2)
		for _, e := range all {
			if e.Name != "" {
				t.Errorf("%s renamed to %q by another user", e.RunID, e.Name)
			}
		}
		// A scoped create is stored as the caller whatever the record says.
		out := mustEval(t, d, db.EvalRun{RunID: "unscoped", UserID: "u2"})
		equal(t, "unscoped create keeps the record's owner", out.UserID, "u2")
		created, err := d.CreateEvalRun(u1, &db.EvalRun{RunID: "as-u1", EvalType: "accuracy", EvalData: json.RawMessage(`{}`), UserID: "u2"})
		noErr(t, err)
		equal(t, "scoped owner", created.UserID, "u1")
		got1, err := d.GetEvalRun(bg, "as-u1")
		noErr(t, err)
		equal(t, "stored owner", got1.UserID, "u1")
	},
	"RenameEvalRun_RenamesAndStampsUpdatedAt": func(t *testing.T, d *db.DB) {
		mustEval(t, d, db.EvalRun{RunID: "e1", UserID: "u1", CreatedAt: 5})
		got, err := d.RenameEvalRun(db.WithUserScope(bg, "u1"), "e1", "better name")
		noErr(t, err)
		equal(t, "name", got.Name, "better name")
		if got.UpdatedAt < 5 {
			t.Errorf("updated_at = %d", got.UpdatedAt)
		}
		got, err = d.RenameEvalRun(bg, "e1", "better name")
		noErr(t, err)
		equal(t, "same name again", got.Name, "better name")
		_, err = d.RenameEvalRun(bg, "missing", "x")
		wantErr(t, err, db.ErrNotFound)
		_, err = d.RenameEvalRun(bg, "e1", "")
		wantErr(t, err, db.ErrInvalidRecord)
	},
}
