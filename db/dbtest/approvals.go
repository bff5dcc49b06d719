package dbtest

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"

	"github.com/agentryhq/agentry/db"
)

func approval(id, run, user string, created int64) *db.Approval {
	return &db.Approval{ID: id, RunID: run, SessionID: "s-" + run, SourceType: "workflow", ApprovalType: "required", PauseType: "confirmation",
		WorkflowID: "wf", UserID: user, SourceName: "Flow", Requirements: json.RawMessage(`[{"step_id":"0","confirmed":null}]`),
		Context: json.RawMessage(`{"step_name":"b"}`), ExpiresAt: 4_000_000_000, CreatedAt: created, RunStatus: "PAUSED"}
}

var approvalTests = map[string]func(t *testing.T, d *db.DB){
	"CreateApproval_GetReturnsEveryColumn": func(t *testing.T, d *db.DB) {
		in := approval("ap_1", "r1", "alice", 100)
		in.ToolName, in.ToolArgs, in.AgentID, in.TeamID = "delete", json.RawMessage(`{"path":"x"}`), "a", "t"
		in.ScheduleID, in.ScheduleRunID, in.UpdatedAt = "sch", "sr", 101
		noErr(t, d.CreateApproval(bg, in))
		got, err := d.GetApproval(bg, "ap_1")
		noErr(t, err)
		in.Status = db.ApprovalPending
		equal(t, "row", compactJSON(*got), compactJSON(*in))
		// A second create with the same id leaves the first alone.
		again := approval("ap_1", "r2", "alice", 200)
		noErr(t, d.CreateApproval(bg, again))
		got, err = d.GetApproval(bg, "ap_1")
		noErr(t, err)
		equal(t, "run", got.RunID, "r1")
	},
	"ResolveApproval_OnlyOncePendingToApproved": func(t *testing.T, d *db.DB) {
		noErr(t, d.CreateApproval(bg, approval("ap_1", "r1", "alice", 100)))
		got, err := d.ResolveApproval(bg, "ap_1", db.ApprovalApproved, "alice", json.RawMessage(`{"note":"ok"}`))
		noErr(t, err)
		if got.Status != db.ApprovalApproved || got.ResolvedBy != "alice" || got.ResolvedAt == 0 || string(compactJSON(*got).ResolutionData) != `{"note":"ok"}` {
			t.Fatalf("resolved = %+v", got)
		}
		if _, err := d.ResolveApproval(bg, "ap_1", db.ApprovalRejected, "bob", nil); !errors.Is(err, db.ErrApprovalResolved) {
			t.Errorf("second resolve: %v", err)
		}
		if _, err := d.ResolveApproval(bg, "missing", db.ApprovalRejected, "bob", nil); !errors.Is(err, db.ErrNotFound) {
			t.Errorf("missing: %v", err)
		}
		if _, err := d.ResolveApproval(bg, "ap_1", "maybe", "bob", nil); !errors.Is(err, db.ErrInvalidRecord) {
			t.Errorf("bad status: %v", err)
		}
	},
	"Approvals_UserScopeHidesOtherUsersRows": func(t *testing.T, d *db.DB) {
		alice, bob := db.WithUserScope(bg, "alice"), db.WithUserScope(bg, "bob")
		noErr(t, d.CreateApproval(alice, approval("ap_a", "r1", "alice", 100)))
		noErr(t, d.CreateApproval(bob, approval("ap_b", "r2", "bob", 101)))
		if err := d.CreateApproval(bob, approval("ap_x", "r3", "alice", 102)); !errors.Is(err, db.ErrInvalidRecord) {
			t.Errorf("bob wrote alice's approval: %v", err)
		}
		if _, err := d.GetApproval(bob, "ap_a"); !errors.Is(err, db.ErrNotFound) {
			t.Errorf("bob read alice's approval: %v", err)
		}
		if _, err := d.ResolveApproval(bob, "ap_a", db.ApprovalApproved, "bob", nil); !errors.Is(err, db.ErrNotFound) {
			t.Errorf("bob resolved alice's approval: %v", err)
		}
		list, n, err := d.ListApprovals(bob, db.ApprovalFilter{Limit: 10, Page: 1})
		noErr(t, err)
		if n != 1 || len(list) != 1 || list[0].ID != "ap_b" {
			t.Errorf("bob lists %d %+v", n, list)
		}
		noErr(t, d.SetApprovalsRunStatus(bob, "r1", "CANCELLED"))
		a, err := d.GetApproval(alice, "ap_a")
		noErr(t, err)
		equal(t, "alice's approval after bob's update", a.Status, db.ApprovalPending)
	},
	"ListApprovals_FiltersPagesNewestFirst": func(t *testing.T, d *db.DB) {
		for i, id := range []string{"ap_1", "ap_2", "ap_3"} {
			noErr(t, d.CreateApproval(bg, approval(id, "r1", "alice", int64(100+i))))
		}
		noErr(t, d.CreateApproval(bg, approval("ap_4", "r2", "bob", 50)))
		_, err := d.ResolveApproval(bg, "ap_2", db.ApprovalRejected, "", nil)
		noErr(t, err)
		list, n, err := d.ListApprovals(bg, db.ApprovalFilter{Status: db.ApprovalPending, Limit: 2, Page: 1})
		noErr(t, err)
		if n != 3 || len(list) != 2 || list[0].ID != "ap_3" || list[1].ID != "ap_1" {
			t.Errorf("page 1: %d %v", n, approvalIDs(list))
		}
		list, _, err = d.ListApprovals(bg, db.ApprovalFilter{Status: db.ApprovalPending, Limit: 2, Page: 2})
		noErr(t, err)
		if len(list) != 1 || list[0].ID != "ap_4" {
			t.Errorf("page 2: %v", approvalIDs(list))
		}
		list, n, err = d.ListApprovals(bg, db.ApprovalFilter{RunID: "r1", WorkflowID: "wf", UserID: "alice", Limit: 10, Page: 1})
		noErr(t, err)
		if n != 3 {
			t.Errorf("run r1: %v", approvalIDs(list))
		}
		if _, _, err := d.ListApprovals(bg, db.ApprovalFilter{}); !errors.Is(err, db.ErrInvalidFilter) {
			t.Errorf("no limit: %v", err)
		}
	},
	"SetApprovalsRunStatus_ExpiresPendingWhenTheRunEnds": func(t *testing.T, d *db.DB) {
		noErr(t, d.CreateApproval(bg, approval("ap_1", "r1", "alice", 100)))
		noErr(t, d.CreateApproval(bg, approval("ap_2", "r1", "alice", 101)))
		_, err := d.ResolveApproval(bg, "ap_2", db.ApprovalApproved, "", nil)
		noErr(t, err)
		noErr(t, d.SetApprovalsRunStatus(bg, "r1", "RUNNING"))
		a, _ := d.GetApproval(bg, "ap_1")
		equal(t, "while running", a.Status+"/"+a.RunStatus, "pending/RUNNING")
		noErr(t, d.SetApprovalsRunStatus(bg, "r1", "COMPLETED"))
		a, _ = d.GetApproval(bg, "ap_1")
		b, _ := d.GetApproval(bg, "ap_2")
		equal(t, "after", a.Status+"/"+b.Status+"/"+a.RunStatus, "expired/approved/COMPLETED")
	},
}

func approvalIDs(list []db.Approval) []string {
	out := make([]string, len(list))
	for i, a := range list {
		out[i] = a.ID
	}
	return out
}

// compactJSON removes the whitespace a JSONB column normalises away.
func compactJSON(a db.Approval) db.Approval {
	for _, f := range []*json.RawMessage{&a.ToolArgs, &a.Requirements, &a.Context, &a.ResolutionData} {
		var b bytes.Buffer
		if len(*f) > 0 && json.Compact(&b, *f) == nil {
			*f = b.Bytes()
		}
	}
	return a
}
