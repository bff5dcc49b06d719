package dbtest

import (
	"testing"

	"github.com/agentryhq/agentry/db"
)

func toolResult(id, session, user string) *db.ToolResult {
	return &db.ToolResult{ResultID: id, Namespace: "offload", Path: "results/" + id, SessionID: session, RunID: "r1",
		ToolCallID: "call-" + id, ToolName: "fetch", ArgsHash: "h", ContentType: "text/plain", SizeBytes: 40_000,
		LineCount: 800, Preview: "head…", UserID: user}
}

var toolResultTests = map[string]func(t *testing.T, d *db.DB){
	"UpsertToolResult_InsertsAndGetReturnsEveryColumn": func(t *testing.T, d *db.DB) {
		in := toolResult("res_1", "s1", "alice")
		in.ExpiresAt = 4_000_000_000
		noErr(t, d.UpsertToolResult(bg, in))
		got, err := d.GetToolResult(bg, "res_1")
		noErr(t, err)
		if got.CreatedAt == 0 {
			t.Fatal("created_at not set")
		}
		in.CreatedAt = got.CreatedAt
		equal(t, "row", *got, *in)
	},
	"UpsertToolResult_SameIDReplaces": func(t *testing.T, d *db.DB) {
		noErr(t, d.UpsertToolResult(bg, toolResult("res_1", "s1", "alice")))
		again := toolResult("res_1", "s1", "alice")
		again.SizeBytes, again.Preview = 7, "new"
		noErr(t, d.UpsertToolResult(bg, again))
		got, err := d.GetToolResult(bg, "res_1")
		noErr(t, err)
		equal(t, "size", got.SizeBytes, int64(7))
		equal(t, "preview", got.Preview, "new")
	},
	"ToolResults_UserScopeHidesOtherUsersRows": func(t *testing.T, d *db.DB) {
		alice, bob := db.WithUserScope(bg, "alice"), db.WithUserScope(bg, "bob")
		noErr(t, d.UpsertToolResult(alice, toolResult("res_a", "s1", "alice")))
		_, err := d.GetToolResult(bob, "res_a")
		wantErr(t, err, db.ErrNotFound)
		_, err = d.GetToolResult(alice, "res_a")
		noErr(t, err)
		list, err := d.ListToolResults(bob, "s1", 10)
		noErr(t, err)
		equal(t, "bob lists", len(list), 0)
		// bob cannot overwrite or delete alice's row
		err = d.UpsertToolResult(bob, toolResult("res_a", "s1", "bob"))
		wantErr(t, err, db.ErrNotFound)
		noErr(t, d.DeleteToolResult(bob, "res_a"))
		got, err := d.GetToolResult(alice, "res_a")
		noErr(t, err)
		equal(t, "owner", got.UserID, "alice")
		// writing another user's row in one's scope is refused up front
		err = d.UpsertToolResult(alice, toolResult("res_b", "s1", "bob"))
		wantErr(t, err, db.ErrInvalidRecord)
	},
	"ListToolResults_OneSessionNewestFirstLimited": func(t *testing.T, d *db.DB) {
		for i, id := range []string{"res_1", "res_2", "res_3"} {
			r := toolResult(id, "s1", "")
			r.CreatedAt = int64(100 + i)
			noErr(t, d.UpsertToolResult(bg, r))
		}
		noErr(t, d.UpsertToolResult(bg, toolResult("res_x", "s2", "")))
		got, err := d.ListToolResults(bg, "s1", 2)
		noErr(t, err)
		equal(t, "count", len(got), 2)
		equal(t, "first", got[0].ResultID, "res_3")
		equal(t, "second", got[1].ResultID, "res_2")
		_, err = d.ListToolResults(bg, "s1", 0)
		wantErr(t, err, db.ErrInvalidFilter)
		_, err = d.ListToolResults(bg, "", 1)
		wantErr(t, err, db.ErrInvalidFilter)
	},
	"ExpiredToolResults_OnlyPastExpiryOldestFirst": func(t *testing.T, d *db.DB) {
		for id, exp := range map[string]int64{"res_never": 0, "res_old": 100, "res_older": 50, "res_future": 10_000} {
			r := toolResult(id, "s1", "")
			r.ExpiresAt = exp
			noErr(t, d.UpsertToolResult(bg, r))
		}
		got, err := d.ExpiredToolResults(bg, 1000, 10)
		noErr(t, err)
		equal(t, "count", len(got), 2)
		equal(t, "oldest", got[0].ResultID, "res_older")
		equal(t, "next", got[1].ResultID, "res_old")
		noErr(t, d.DeleteToolResult(bg, "res_older"))
		_, err = d.GetToolResult(bg, "res_older")
		wantErr(t, err, db.ErrNotFound)
	},
	"ToolResults_InvalidInputIsRefused": func(t *testing.T, d *db.DB) {
		wantErr(t, d.UpsertToolResult(bg, &db.ToolResult{Namespace: "n", Path: "p"}), db.ErrInvalidRecord)
		wantErr(t, d.UpsertToolResult(bg, &db.ToolResult{ResultID: "x"}), db.ErrInvalidRecord)
		_, err := d.GetToolResult(bg, "\xff")
		wantErr(t, err, db.ErrNotFound)
	},
}
