package schedule

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/agentryhq/agentry/db"
)

// DriftReasonPrefix starts the disabled_reason of a schedule disabled
// because its endpoint no longer addresses its provenance target (Agno
// 3.0's endpoint_drift:{endpoint}!={target_type}:{target_id}).
const DriftReasonPrefix = "endpoint_drift:"

// endpointDrift reports whether sc is a schedule a control plane manages
// (managed_by set, with a provenance target: target_type and target_id)
// whose endpoint no longer addresses that target's run route, as Agno
// 3.0's executor tells (match_run_endpoint: the endpoint, trailing slashes
// trimmed, is /{target_type}s/{target_id}/runs). Such a schedule must not
// fire: it would run a component its provenance does not name (its
// endpoint was repointed by a writer that left the target as it was).
// reason is the disabled_reason Agno writes, msg the firing's error.
func endpointDrift(sc *db.Schedule) (reason, msg string, drifted bool) {
	if sc.ManagedBy == "" || sc.TargetType == "" || sc.TargetID == "" {
		return "", "", false
	}
	if AddressesTarget(sc) {
		return "", "", false
	}
	target := sc.TargetType + ":" + sc.TargetID
	return DriftReasonPrefix + sc.Endpoint + "!=" + target,
		fmt.Sprintf("Schedule %s endpoint %s does not match its provenance target %s; refusing to execute", sc.ID, strconv.Quote(sc.Endpoint), target),
		true
}

// AddressesTarget reports whether sc's endpoint, trailing slashes trimmed,
// is its provenance target's run route (/{target_type}s/{target_id}/runs),
// as Agno 3.0's match_run_endpoint tells. A schedule without a target
// addresses none.
func AddressesTarget(sc *db.Schedule) bool {
	return sc.TargetType != "" && sc.TargetID != "" && sc.Endpoint != "" &&
		strings.TrimRight(sc.Endpoint, "/") == "/"+sc.TargetType+"s/"+sc.TargetID+"/runs"
}

// driftKey is the key of the failed firing a drifted schedule records for
// its due time due: distinct from the firing's own key, so that a firing
// of that due time after a fix is not taken for this one.
func driftKey(scheduleID string, due time.Time) string {
	return Key(scheduleID, due) + ":endpoint-drift"
}

// refuseDrift records firing f of drifted schedule sc as failed with msg
// (insert-if-absent: replicas write one row) and disables the schedule
// with reason, as Agno's executor does, instead of firing it. The disable
// is the scheduler's (DisableSchedule): only while the schedule is enabled
// with the cron expression and time zone read. Enabling the schedule
// again without repointing it disables it again at its next due time.
func (s *Scheduler) refuseDrift(ctx context.Context, sc *db.Schedule, f Firing, reason, msg string) error {
	now := s.Now().Unix()
	row := &db.ScheduleRun{ID: runIDOf(f.Key), ScheduleID: sc.ID, Attempt: 1, TriggeredAt: f.DueAt.Unix(), Status: db.ScheduleRunFailed,
		Error: msg, UserID: sc.UserID, CreatedAt: now, CompletedAt: now}
	if _, err := s.d.CreateScheduleRun(ctx, row); err != nil && !errors.Is(err, db.ErrExists) {
		return err
	}
	if _, err := s.d.DisableSchedule(ctx, sc, reason); err != nil {
		return err
	}
	s.cfg.Logger.Error("schedule: refused to fire a schedule whose endpoint no longer matches its target; disabled it",
		"schedule_id", sc.ID, "endpoint", sc.Endpoint, "target_type", sc.TargetType, "target_id", sc.TargetID)
	return nil
}
