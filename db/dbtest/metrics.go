package dbtest

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/run"
)

// day0 is midnight UTC of the first day the metrics tests write runs on.
var day0 = time.Date(2026, 3, 10, 0, 0, 0, 0, time.UTC)

// metricsRun stores a run of user on day (0-based from day0) with tokens.
func metricsRun(t *testing.T, d *db.DB, user, id string, day int, typ run.Type, status run.Status, in, out int) {
	t.Helper()
	at := day0.AddDate(0, 0, day).Add(time.Hour).Unix()
	sid := "s-" + id
	mustSession(t, bg, d, db.Session{SessionID: sid, SessionType: typ, UserID: user, CreatedAt: at})
	data, _ := json.Marshal(map[string]any{"run_id": id, "model": "gpt-x", "model_provider": "OpenAI",
		"metrics": map[string]any{"input_tokens": in, "output_tokens": out, "total_tokens": in + out, "duration": 1.5}})
	r := &db.Run{RunID: id, SessionID: sid, RunType: typ, UserID: user, Status: status, RunData: data, CreatedAt: at}
	switch typ {
	case run.TypeTeam:
		r.TeamID = "crew"
	case run.TypeWorkflow:
		r.WorkflowID = "flow"
	default:
		r.AgentID = "echo"
	}
	mustRun(t, bg, d, r)
}

func metricsByKey(rows []db.DailyMetrics) map[string]db.DailyMetrics {
	out := map[string]db.DailyMetrics{}
	for _, m := range rows {
		out[m.Date+"/"+m.UserID] = m
	}
	return out
}

var metricsTests = map[string]func(t *testing.T, d *db.DB){
	"RefreshMetrics_PassesEmptyDaysInOneQuery": refreshPassesEmptyDays,
	"RefreshMetrics_AggregatesPerUserAndDay": func(t *testing.T, d *db.DB) {
		metricsRun(t, d, "alice", "r1", 0, run.TypeAgent, run.StatusCompleted, 10, 5)
		metricsRun(t, d, "alice", "r2", 0, run.TypeTeam, run.StatusError, 7, 0)
		metricsRun(t, d, "bob", "r3", 0, run.TypeAgent, run.StatusCompleted, 1, 1)
		metricsRun(t, d, "", "r4", 1, run.TypeWorkflow, run.StatusCompleted, 2, 3)
		metricsRun(t, d, "alice", "r5", 2, run.TypeAgent, run.StatusCompleted, 4, 4)
		now := day0.AddDate(0, 0, 2).Add(12 * time.Hour)
		written, err := d.RefreshMetricsAt(bg, now)
		noErr(t, err)
		equal(t, "rows written", len(written), 4)
		rows, err := d.ListDailyMetrics(bg, db.MetricsFilter{})
		noErr(t, err)
		got := metricsByKey(rows)
		a := got["2026-03-10/alice"]
		equal(t, "alice day 0 counts", []int64{a.AgentRunsCount, a.TeamRunsCount, a.AgentSessionsCount, a.TeamSessionsCount, a.UsersCount},
			[]int64{1, 1, 1, 1, 1})
		equal(t, "alice day 0 completed", a.Completed, true)
		equal(t, "period", a.AggregationPeriod, "daily")
		var tm struct {
			Input    int64            `json:"input_tokens"`
			Output   int64            `json:"output_tokens"`
			Statuses map[string]int64 `json:"runs_by_status"`
			Duration float64          `json:"duration"`
			Comps    []map[string]any `json:"components"`
		}
		noErr(t, json.Unmarshal(a.TokenMetrics, &tm))
		equal(t, "alice tokens", []int64{tm.Input, tm.Output}, []int64{17, 5})
		equal(t, "alice statuses", tm.Statuses, map[string]int64{"COMPLETED": 1, "ERROR": 1})
		equal(t, "alice duration", tm.Duration, 3.0)
		equal(t, "alice components", len(tm.Comps), 2)
		var models []map[string]any
		noErr(t, json.Unmarshal(a.ModelMetrics, &models))
		equal(t, "alice models", fmt.Sprintln(models[0]["model_id"], models[0]["model_provider"], models[0]["count"], models[0]["input_tokens"]), "gpt-x OpenAI 2 17\n")
		u := got["2026-03-11/"]
		equal(t, "unowned day 1", []int64{u.WorkflowRunsCount, u.WorkflowSessionsCount, u.UsersCount}, []int64{1, 1, 0})
		today := got["2026-03-12/alice"]
		equal(t, "today open", today.Completed, false)
		equal(t, "bob day 0", got["2026-03-10/bob"].AgentRunsCount, int64(1))
	},
	"RefreshMetrics_IsIncrementalFromTheWatermark": func(t *testing.T, d *db.DB) {
		metricsRun(t, d, "alice", "r1", 0, run.TypeAgent, run.StatusCompleted, 1, 1)
		metricsRun(t, d, "alice", "r2", 1, run.TypeAgent, run.StatusCompleted, 1, 1)
		now := day0.AddDate(0, 0, 1).Add(time.Hour)
		_, err := d.RefreshMetricsAt(bg, now)
		noErr(t, err)
		// A late run on the completed day 0 is past the watermark: not
		// read again. Day 1 (today) is open and is recomputed.
		metricsRun(t, d, "alice", "late", 0, run.TypeAgent, run.StatusCompleted, 1, 1)
		metricsRun(t, d, "alice", "r3", 1, run.TypeAgent, run.StatusCompleted, 1, 1)
		written, err := d.RefreshMetricsAt(bg, now.Add(time.Hour))
		noErr(t, err)
		equal(t, "days rewritten", len(written), 1)
		equal(t, "rewritten day", written[0].Date, "2026-03-11")
		rows, err := d.ListDailyMetrics(bg, db.MetricsFilter{UserID: "alice"})
		noErr(t, err)
		got := metricsByKey(rows)
		equal(t, "day 0 kept", got["2026-03-10/alice"].AgentRunsCount, int64(1))
		equal(t, "day 1 recomputed", got["2026-03-11/alice"].AgentRunsCount, int64(2))
		equal(t, "rows", len(rows), 2)
		// After midnight, day 1 completes; day 2 has no activity.
		written, err = d.RefreshMetricsAt(bg, day0.AddDate(0, 0, 2).Add(time.Minute))
		noErr(t, err)
		equal(t, "completed day 1", len(written) == 1 && written[0].Completed && written[0].Date == "2026-03-11", true)
		written, err = d.RefreshMetricsAt(bg, day0.AddDate(0, 0, 2).Add(time.Hour))
		noErr(t, err)
		equal(t, "nothing left to do", len(written), 0)
	},
	"ListDailyMetrics_ScopeAndDates": func(t *testing.T, d *db.DB) {
		metricsRun(t, d, "alice", "r1", 0, run.TypeAgent, run.StatusCompleted, 1, 1)
		metricsRun(t, d, "bob", "r2", 1, run.TypeAgent, run.StatusCompleted, 1, 1)
		metricsRun(t, d, "", "r3", 1, run.TypeAgent, run.StatusCompleted, 1, 1)
		_, err := d.RefreshMetricsAt(bg, day0.AddDate(0, 0, 3))
		noErr(t, err)
		rows, err := d.ListDailyMetrics(db.WithUserScope(bg, "alice"), db.MetricsFilter{UserID: "bob"})
		noErr(t, err)
		equal(t, "alice's scope", len(rows) == 1 && rows[0].UserID == "alice", true)
		rows, err = d.ListDailyMetrics(bg, db.MetricsFilter{ByUser: true})
		noErr(t, err)
		equal(t, "unowned bucket", len(rows) == 1 && rows[0].UserID == "" && rows[0].Date == "2026-03-11", true)
		rows, err = d.ListDailyMetrics(bg, db.MetricsFilter{From: "2026-03-11", To: "2026-03-11"})
		noErr(t, err)
		equal(t, "one day", len(rows), 2)
		_, err = d.ListDailyMetrics(bg, db.MetricsFilter{From: "March"})
		wantErr(t, err, db.ErrInvalidFilter)
	},
}
