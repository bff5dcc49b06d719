package run

import (
	"errors"
	"fmt"
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
)

// ErrNotContinuable is returned when continuing a run that is not PAUSED.
var ErrNotContinuable = errors.New("run: not continuable (only a PAUSED run can be continued)")

// ErrInvalidStatus is returned by ParseStatus for an unknown value.
var ErrInvalidStatus = errors.New("run: invalid status")

// ParseStatus accepts any case.
func ParseStatus(s string) (Status, error) {
	st := Status(strings.ToUpper(strings.TrimSpace(s)))
	switch st {
	case StatusPending, StatusRunning, StatusCompleted, StatusPaused, StatusCancelled, StatusError:
		return st, nil
	}
	return "", fmt.Errorf("%w %q: want one of PENDING, RUNNING, COMPLETED, PAUSED, CANCELLED, ERROR", ErrInvalidStatus, s)
}

// Terminal reports whether no further work happens on a run in this state.
func (s Status) Terminal() bool {
	return s == StatusCompleted || s == StatusCancelled || s == StatusError
}

// InHistory reports whether runs of this status feed later runs' context.
func (s Status) InHistory() bool {
	return s != StatusPaused && s != StatusCancelled && s != StatusError
}

// Type says what produced a run; it is the runs table's run_type.
type Type string

// Run types.
const (
	TypeAgent    Type = "agent"
	TypeTeam     Type = "team"
	TypeWorkflow Type = "workflow"
)
