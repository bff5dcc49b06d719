package dbtest

import (
	"encoding/json"
	"testing"

	"github.com/agentryhq/agentry/db"
)

var scopeTests = map[string]func(t *testing.T, d *db.DB){
	"Scope_HidesOtherUsersSessions": func(t *testing.T, d *db.DB) {
		alice, bob := db.WithUserScope(bg, "alice"), db.WithUserScope(bg, "bob")
		mustSession(t, alice, d, db.Session{SessionID: "sa"})
		mustSession(t, bob, d, db.Session{SessionID: "sb"})
		got, err := d.GetSession(alice, "sa")
		noErr(t, err)
		equal(t, "scoped write stamps the user", got.UserID, "alice")
		_, err = d.GetSession(bob, "sa")
		wantErr(t, err, db.ErrNotFound)
		list, total, err := d.ListSessions(bob, db.SessionFilter{Limit: 10, Page: 1})
		noErr(t, err)
		equal(t, "bob's list", sessionIDs(list), []string{"sb"})
		equal(t, "bob's total", total, 1)
		list, _, err = d.ListSessions(bob, db.SessionFilter{Limit: 10, Page: 1, UserID: "alice"})
		noErr(t, err)
		equal(t, "bob asking for alice's", sessionIDs(list), []string{"sb"})
		noErr(t, d.DeleteSessions(bob, "sa"))
		_, err = d.GetSession(alice, "sa")
		noErr(t, err)
	},
	"Scope_UpsertCannotStealSession": func(t *testing.T, d *db.DB) {
		alice, bob := db.WithUserScope(bg, "alice"), db.WithUserScope(bg, "bob")
		mustSession(t, alice, d, db.Session{SessionID: "s", SessionData: json.RawMessage(`{"session_name":"mine"}`)})
		_, err := d.UpsertSession(bob, &db.Session{SessionID: "s", SessionType: "agent", SessionData: json.RawMessage(`{"session_name":"stolen"}`)})
		wantErr(t, err, db.ErrNotFound)
		_, err = d.UpsertSession(bg, &db.Session{SessionID: "s", SessionType: "agent", UserID: "bob"})
		wantErr(t, err, db.ErrNotFound)
		got, err := d.GetSession(bg, "s")
		noErr(t, err)
		equal(t, "owner", got.UserID, "alice")
		jsonEqual(t, "data", got.SessionData, []byte(`{"session_name":"mine"}`))
		mustSession(t, alice, d, db.Session{SessionID: "s", SessionData: json.RawMessage(`{"session_name":"renamed"}`)})
		// A session nobody owns can be claimed.
		mustSession(t, bg, d, db.Session{SessionID: "open"})
		got = mustSession(t, bob, d, db.Session{SessionID: "open"})
		equal(t, "claimed", got.UserID, "bob")
	},
	"Scope_HidesOtherUsersRuns": func(t *testing.T, d *db.DB) {
		alice, bob := db.WithUserScope(bg, "alice"), db.WithUserScope(bg, "bob")
		mustSession(t, alice, d, db.Session{SessionID: "s"})
		mustRun(t, alice, d, NewRun("s", "ra"))
		_, err := d.GetRun(bob, "ra")
		wantErr(t, err, db.ErrNotFound)
		runs, total, err := d.GetRuns(bob, db.RunFilter{SessionID: "s", Limit: 10, Page: 1, WithTotal: true})
		noErr(t, err)
		equal(t, "bob sees runs", len(runs), 0)
		equal(t, "bob's total", total, 0)
		runs, _, err = d.GetRuns(bob, db.RunFilter{SessionID: "s", Limit: 10, Page: 2})
		noErr(t, err)
		equal(t, "bob's deep page", len(runs), 0)
		hist, err := d.HistoryRuns(bob, db.HistoryQuery{SessionID: "s", Limit: 5})
		noErr(t, err)
		equal(t, "bob's history", len(hist), 0)
		wantErr(t, d.DeleteRun(bob, "ra"), db.ErrNotFound)
		_, err = d.UpsertRun(bob, NewRun("s", "ra"))
		wantErr(t, err, db.ErrNotFound)
		got, err := d.GetRun(alice, "ra")
		noErr(t, err)
		equal(t, "owner kept", got.UserID, "alice")
		hist, err = d.HistoryRuns(alice, db.HistoryQuery{SessionID: "s", Limit: 5})
		noErr(t, err)
		equal(t, "alice's history", runIDs(hist), []string{"ra"})
	},
	"Scope_HidesOtherUsersMemories": func(t *testing.T, d *db.DB) {
		alice, bob := db.WithUserScope(bg, "alice"), db.WithUserScope(bg, "bob")
		mustMemory(t, alice, d, db.Memory{MemoryID: "ma", Memory: "likes tea", Topics: []string{"drinks"}})
		mustMemory(t, bob, d, db.Memory{MemoryID: "mb", Memory: "likes coffee", Topics: []string{"coffee"}})
		_, err := d.GetMemory(bob, "ma")
		wantErr(t, err, db.ErrNotFound)
		list, total, err := d.ListMemories(bob, db.MemoryFilter{Limit: 10, Page: 1})
		noErr(t, err)
		equal(t, "bob's memories", len(list), 1)
		equal(t, "bob's total", total, 1)
		topics, err := d.MemoryTopics(bob)
		noErr(t, err)
		equal(t, "bob's topics", topics, []string{"coffee"})
		stats, n, err := d.UserMemoryStats(bob, 10, 1)
		noErr(t, err)
		equal(t, "bob's stats", n, 1)
		equal(t, "bob's stats user", stats[0].UserID, "bob")
		_, err = d.UpsertMemory(bob, &db.Memory{MemoryID: "ma", Memory: "stolen"})
		wantErr(t, err, db.ErrNotFound)
		noErr(t, d.DeleteMemories(bob, "ma"))
		got, err := d.GetMemory(alice, "ma")
		noErr(t, err)
		equal(t, "alice's memory intact", got.Memory, "likes tea")
	},
}
