package agent

import (
	"testing"

	"github.com/google/uuid"

	"github.com/agentryhq/agentry/run"
)

// TestPauseApprovalID_IsAUUIDAndTheEarlierIDIsRecognised: a paused run's
// approval id is a UUID, the same for the same pause; the
// "run:requirement" id earlier versions stored still names it.
func TestPauseApprovalID_IsAUUIDAndTheEarlierIDIsRecognised(t *testing.T) {
	out := &run.Output{RunID: "r1", Requirements: []run.Requirement{{}, {ID: "req-1"}}}
	id := PauseApprovalID(out)
	if _, err := uuid.Parse(id); err != nil {
		t.Fatalf("id %q: %v", id, err)
	}
	if again := PauseApprovalID(&run.Output{RunID: "r1", Requirements: []run.Requirement{{ID: "req-1"}}}); again != id {
		t.Errorf("the same pause gave %q and %q", id, again)
	}
	if other := PauseApprovalID(&run.Output{RunID: "r2", Requirements: []run.Requirement{{ID: "req-1"}}}); other == id {
		t.Errorf("two runs share the id %q", id)
	}
	for _, c := range []struct {
		id   string
		want bool
	}{{id, true}, {"r1:req-1", true}, {"r1:req-2", false}, {"", false}} {
		if got := IsPauseApproval(out, c.id); got != c.want {
			t.Errorf("IsPauseApproval(%q) = %v", c.id, got)
		}
	}
	if PauseApprovalID(&run.Output{RunID: "r1"}) != "" || IsPauseApproval(&run.Output{RunID: "r1"}, "r1:") {
		t.Error("a run without a requirement id has an approval id")
	}
}
