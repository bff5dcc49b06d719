package run

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Status is a run's lifecycle state, stored uppercase.
type Status string

// Run statuses (Agno 3.0 RunStatus).
const (
	StatusPending   Status = "PENDING"
	StatusRunning   Status = "RUNNING"
	StatusCompleted Status = "COMPLETED"
	StatusPaused    Status = "PAUSED"
	StatusCancelled Status = "CANCELLED"
	StatusError     Status = "ERROR"
	// StatusRegenerated marks a finished run whose answer was regenerated:
	// a newer sibling run replaces it, so it no longer feeds history. Agno
	// writes it; Agentry reads it.
	StatusRegenerated Status = "REGENERATED"
)

// Statuses are every status a stored run may have, in lifecycle order.
var Statuses = []Status{StatusPending, StatusRunning, StatusCompleted, StatusPaused, StatusCancelled, StatusError, StatusRegenerated}

// HistorySkipStatuses are the statuses whose runs never feed a later run's
// context (Agno's HISTORY_SKIP_STATUSES).
var HistorySkipStatuses = []Status{StatusPaused, StatusCancelled, StatusError, StatusRegenerated}

// ErrNotContinuable is returned when continuing a run that is not PAUSED.
var ErrNotContinuable = errors.New("run: not continuable (only a PAUSED run can be continued)")

// ErrInvalidStatus is returned by ParseStatus for an unknown value.
var ErrInvalidStatus = errors.New("run: invalid status")

// StatusNames lists the statuses for messages: "PENDING, RUNNING, …".
func StatusNames() string {
	names := make([]string, len(Statuses))
	for i, s := range Statuses {
		names[i] = string(s)
	}
	return strings.Join(names, ", ")
}

// ParseStatus accepts any case.
func ParseStatus(s string) (Status, error) {
	st := Status(strings.ToUpper(strings.TrimSpace(s)))
	if slices.Contains(Statuses, st) {
		return st, nil
	}
	return "", fmt.Errorf("%w %q: want one of %s", ErrInvalidStatus, s, StatusNames())
}

// Terminal reports whether no further work happens on a run in this state.
func (s Status) Terminal() bool {
	return s == StatusCompleted || s == StatusCancelled || s == StatusError || s == StatusRegenerated
}

// InHistory reports whether runs of this status feed later runs' context.
func (s Status) InHistory() bool {
	return !slices.Contains(HistorySkipStatuses, s)
}

// Type says what produced a run; it is the runs table's run_type.
type Type string

// Run types.
const (
	TypeAgent    Type = "agent"
	TypeTeam     Type = "team"
	TypeWorkflow Type = "workflow"
)
