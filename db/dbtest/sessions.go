package dbtest

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/internal/jsontest"
	"github.com/agentryhq/agentry/run"
)

var sessionTests = map[string]func(t *testing.T, d *db.DB){
	// What UpsertSession returns is the row as GetSession reads it back,
	// on insert and on update, JSON null and a string-encoded document
	// included (SQLite builds it from what it wrote instead of reading it).
	"UpsertSession_ReturnsTheRowAsStored": func(t *testing.T, d *db.DB) {
		big := `{"name":"` + strings.Repeat("x", 6000) + `","n":12345678901234567890}`
		for i, in := range []*db.Session{
			{SessionID: "ret", SessionType: run.TypeAgent, AgentID: "a", UserID: "u", SessionData: json.RawMessage(`{"session_state":{"k":1}}`),
				AgentData: json.RawMessage(big), Metadata: json.RawMessage(`null`), Summary: json.RawMessage(`"{\"summary\":\"s\"}"`), CreatedAt: 100, UpdatedAt: 100},
			{SessionID: "ret", SessionType: run.TypeAgent, AgentID: "a", UserID: "u", SessionData: json.RawMessage(` {"session_state": {"k": 2}} `),
				AgentData: json.RawMessage(big), TeamData: json.RawMessage(`[]`), CreatedAt: 200, UpdatedAt: 200},
			{SessionID: "ret", SessionType: run.TypeAgent, AgentID: "a", UserID: "u", SessionData: json.RawMessage(`{"session_state":{"k":3}}`),
				CreatedAt: 100, UpdatedAt: 300},
		} {
			got, err := d.UpsertSession(bg, in)
			noErr(t, err)
			stored, err := d.GetSession(bg, "ret")
			noErr(t, err)
			equal(t, fmt.Sprintf("write %d: created_at kept", i+1), got.CreatedAt, int64(100))
			gb, _ := json.Marshal(got)
			sb, _ := json.Marshal(stored)
			if d := jsontest.Diff(sb, gb); d != "" {
				t.Fatalf("write %d: UpsertSession returned %s\nGetSession reads %s\n%s", i+1, gb, sb, d)
			}
		}
	},
	"UpsertSession_RoundTripsEveryColumn": func(t *testing.T, d *db.DB) {
		in := db.Session{SessionID: "s1", SessionType: run.TypeTeam, TeamID: "team-1", UserID: "u1",
			SessionData: json.RawMessage(`{"session_name":"Trip","session_state":{"n":1}}`),
			TeamData:    json.RawMessage(`{"name":"crew"}`), Metadata: json.RawMessage(`{"k":[1,2]}`),
			Summary: json.RawMessage(`{"summary":"s"}`), CreatedAt: 1700000000}
		mustSession(t, bg, d, in)
		got, err := d.GetSession(bg, "s1")
		noErr(t, err)
		equal(t, "type", got.SessionType, run.TypeTeam)
		equal(t, "ids", []string{got.TeamID, got.UserID, got.AgentID, got.WorkflowID}, []string{"team-1", "u1", "", ""})
		jsonEqual(t, "session_data", got.SessionData, in.SessionData)
		jsonEqual(t, "team_data", got.TeamData, in.TeamData)
		jsonEqual(t, "metadata", got.Metadata, in.Metadata)
		jsonEqual(t, "summary", got.Summary, in.Summary)
		equal(t, "agent_data", len(got.AgentData), 0)
		equal(t, "created_at", got.CreatedAt, int64(1700000000))
		if got.UpdatedAt == 0 {
			t.Fatal("updated_at not set")
		}
	},
	"UpsertSession_UpdatesAndKeepsCreatedAt": func(t *testing.T, d *db.DB) {
		mustSession(t, bg, d, db.Session{SessionID: "s1", AgentID: "a", CreatedAt: 100})
		out := mustSession(t, bg, d, db.Session{SessionID: "s1", AgentID: "b", SessionData: json.RawMessage(`{"session_name":"x"}`)})
		equal(t, "created_at", out.CreatedAt, int64(100))
		got, err := d.GetSession(bg, "s1")
		noErr(t, err)
		equal(t, "agent_id", got.AgentID, "b")
		jsonEqual(t, "session_data", got.SessionData, []byte(`{"session_name":"x"}`))
	},
	"GetSession_MissingIsNotFound": func(t *testing.T, d *db.DB) {
		_, err := d.GetSession(bg, "nope")
		wantErr(t, err, db.ErrNotFound)
	},
	"UpsertSession_RequiresIDAndType": func(t *testing.T, d *db.DB) {
		_, err := d.UpsertSession(bg, &db.Session{SessionType: run.TypeAgent})
		wantErr(t, err, db.ErrInvalidRecord)
		_, err = d.UpsertSession(bg, &db.Session{SessionID: "x"})
		wantErr(t, err, db.ErrInvalidRecord)
	},
	"ListSessions_FiltersByTypeComponentUserAndName": func(t *testing.T, d *db.DB) {
		mustSession(t, bg, d, db.Session{SessionID: "a1", SessionType: run.TypeAgent, AgentID: "ag", UserID: "u1",
			SessionData: json.RawMessage(`{"session_name":"Holiday PLANS"}`)})
		mustSession(t, bg, d, db.Session{SessionID: "a2", SessionType: run.TypeAgent, AgentID: "other", UserID: "u2"})
		mustSession(t, bg, d, db.Session{SessionID: "t1", SessionType: run.TypeTeam, TeamID: "ag", UserID: "u1",
			SessionData: json.RawMessage(`{"session_name":"work"}`)})
		mustSession(t, bg, d, db.Session{SessionID: "w1", SessionType: run.TypeWorkflow, WorkflowID: "wf"})
		cases := []struct {
			name string
			f    db.SessionFilter
			want []string
		}{
			{"agent type", db.SessionFilter{SessionType: run.TypeAgent}, []string{"a1", "a2"}},
			{"agent component", db.SessionFilter{SessionType: run.TypeAgent, ComponentID: "ag"}, []string{"a1"}},
			{"team component", db.SessionFilter{SessionType: run.TypeTeam, ComponentID: "ag"}, []string{"t1"}},
			{"user", db.SessionFilter{UserID: "u1"}, []string{"a1", "t1"}},
			{"name substring any case", db.SessionFilter{SessionName: "day plan"}, []string{"a1"}},
			{"name no match", db.SessionFilter{SessionName: "%"}, nil},
			{"workflow", db.SessionFilter{SessionType: run.TypeWorkflow}, []string{"w1"}},
		}
		for _, c := range cases {
			c.f.Limit, c.f.Page, c.f.SortBy, c.f.SortOrder = 10, 1, "created_at", db.Asc
			got, total, err := d.ListSessions(bg, c.f)
			noErr(t, err)
			if len(c.want) == 0 {
				c.want = []string{}
			}
			equal(t, c.name+" ids", sortedIDs(sessionIDs(got)), c.want)
			equal(t, c.name+" total", total, len(c.want))
		}
	},
	"ListSessions_PagesAndSorts": func(t *testing.T, d *db.DB) {
		for i := range 5 {
			mustSession(t, bg, d, db.Session{SessionID: fmt.Sprintf("s%d", i), CreatedAt: int64(100 + i)})
		}
		cases := []struct {
			name        string
			limit, page int
			order       string
			want        []string
		}{
			{"first page newest first by default", 2, 1, "", []string{"s4", "s3"}},
			{"last partial page", 2, 3, "", []string{"s0"}},
			{"beyond last page", 2, 4, "", []string{}},
			{"ascending", 3, 1, db.Asc, []string{"s0", "s1", "s2"}},
		}
		for _, c := range cases {
			got, total, err := d.ListSessions(bg, db.SessionFilter{Limit: c.limit, Page: c.page, SortOrder: c.order})
			noErr(t, err)
			equal(t, c.name, sessionIDs(got), c.want)
			equal(t, c.name+" total", total, 5)
		}
	},
	"ListSessions_RejectsInvalidFilter": func(t *testing.T, d *db.DB) {
		for _, f := range []db.SessionFilter{{Limit: 0, Page: 1}, {Limit: 5, Page: 0}, {Limit: 5, Page: 1, SortBy: "session_id"}} {
			_, _, err := d.ListSessions(bg, f)
			wantErr(t, err, db.ErrInvalidFilter)
		}
	},
	"DeleteSessions_CascadesToRuns": func(t *testing.T, d *db.DB) {
		seedRuns(t, d, "s1", 3)
		seedRuns(t, d, "s2", 1)
		noErr(t, d.DeleteSessions(bg, "s1", "missing"))
		_, err := d.GetSession(bg, "s1")
		wantErr(t, err, db.ErrNotFound)
		_, err = d.GetRun(bg, "s1-r0")
		wantErr(t, err, db.ErrNotFound)
		runs, _, err := d.GetRuns(bg, db.RunFilter{SessionID: "s1", Limit: 10, Page: 1})
		noErr(t, err)
		equal(t, "runs left in deleted session", len(runs), 0)
		_, err = d.GetRun(bg, "s2-r0")
		noErr(t, err)
	},
}

func sortedIDs(in []string) []string {
	out := append([]string{}, in...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}
