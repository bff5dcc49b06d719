package team

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/run"
)

// TestPause_MemberRunEndedOnItsOwnIsNotContinuedAgain: the paused member
// run a PAUSED team run waits on may end on its own before the team run is
// continued: continued directly (AgentOS's continue route for the member's
// run, named by the requirement's member_run_id), or cancelled (its cancel
// route). Continuing the team run then takes the member run as its
// database has it, not the stale PAUSED copy in member_responses: the
// confirmed tool does not run a second time (or after the cancel), the
// member's row is not overwritten, and a cancelled member run cancels the
// team run.
func TestPause_MemberRunEndedOnItsOwnIsNotContinuedAgain(t *testing.T) {
	t.Parallel()
	for _, end := range []string{"continued", "cancelled"} {
		for _, mode := range []Mode{ModeCoordinate, ModeBroadcast} {
			t.Run(end+"/"+string(mode), func(t *testing.T) {
				t.Parallel()
				ctx := context.Background()
				d := openDB(t)
				var ran int32
				leader := script(call(ToolDelegate, map[string]any{"member_id": "ops", "task": "deploy v2"}), answer("the team is done"))
				if mode == ModeBroadcast {
					leader = script(call(ToolDelegateAll, map[string]any{"task": "deploy v2"}), answer("the team is done"))
				}
				tm := opsTeam(t, d, mode, &ran, leader)
				paused, err := tm.Run(ctx, run.TextInput("ship it"), agent.WithSessionID("s"))
				if err != nil || paused.Status != run.StatusPaused || len(paused.Requirements) != 1 {
					t.Fatalf("first leg: %v, %v", paused.Status, err)
				}
				memberRunID := paused.Requirements[0].MemberRunID
				want := run.StatusCompleted
				switch end {
				case "continued":
					ops := tm.Members()[0]
					m, err := ops.ContinueRunID(ctx, memberRunID, agent.WithRequirements(confirmAll(paused.Requirements)))
					if err != nil || m.Status != run.StatusCompleted || ran != 1 {
						t.Fatalf("member continued on its own: %v, %v, deploy ran %d", m.Status, err, ran)
					}
				case "cancelled":
					// As AgentOS's cancel route stores a paused run it cancels.
					row, err := d.GetRun(ctx, memberRunID)
					if err != nil {
						t.Fatal(err)
					}
					m, _ := row.Output()
					m.Status, m.Requirements = run.StatusCancelled, nil
					cr, err := db.RunFromOutput(m)
					if err != nil {
						t.Fatal(err)
					}
					if _, err := d.UpsertRun(ctx, cr); err != nil {
						t.Fatal(err)
					}
					want = run.StatusCancelled
				}
				row, err := d.GetRun(ctx, paused.RunID)
				if err != nil {
					t.Fatal(err)
				}
				stored, _ := row.Output() // member_responses hold the member run PAUSED
				out, err := tm.ContinueRun(ctx, stored, agent.WithRequirements(confirmAll(stored.Requirements)))
				if out == nil || out.Status != want {
					var got run.Status
					if out != nil {
						got = out.Status
					}
					t.Fatalf("team continue: %s, %v; want %s (deploy ran %d times)", got, err, want, ran)
				}
				if want == run.StatusCancelled && !errors.Is(err, ErrMemberCancelled) {
					t.Errorf("team continue error %v, want ErrMemberCancelled", err)
				}
				wantRan := int32(0)
				if end == "continued" {
					wantRan = 1
				}
				if ran != wantRan {
					t.Errorf("deploy ran %d times, want %d", ran, wantRan)
				}
				mrow, err := d.GetRun(ctx, memberRunID)
				if err != nil {
					t.Fatal(err)
				}
				if wantMember := map[string]run.Status{"continued": run.StatusCompleted, "cancelled": run.StatusCancelled}[end]; mrow.Status != wantMember {
					t.Errorf("member row is %s, want %s", mrow.Status, wantMember)
				}
				if end == "continued" {
					var delegated string
					for _, ex := range out.Tools {
						if ex.ToolName == ToolDelegate || ex.ToolName == ToolDelegateAll {
							delegated = ex.Result
						}
					}
					if !strings.Contains(delegated, "deployed it") {
						t.Errorf("the leader read %q, not the member's answer", delegated)
					}
					if len(out.MemberResponses) != 1 || !strings.Contains(string(out.MemberResponses[0]), `"COMPLETED"`) {
						t.Errorf("member_responses %s", out.MemberResponses)
					}
				}
			})
		}
	}
}
