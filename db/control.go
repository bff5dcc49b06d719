package db

import "errors"

// Errors of the control-plane tables (evals, metrics, traces, components).
var (
	// ErrUnsupportedDriver: the driver lacks an optional ability (an
	// EvalDriver, MetricsDriver, TraceDriver or ComponentDriver).
	ErrUnsupportedDriver = errors.New("db: the driver does not support this")
	// ErrExists: a create found the key taken.
	ErrExists = errors.New("db: already exists")
)
