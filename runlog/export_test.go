package runlog

// MaxPending is maxPending, for tests.
const MaxPending = maxPending
