package db

import (
	"errors"
	"fmt"
)

var (
	// ErrNotFound: no such object, or it belongs to another user.
	ErrNotFound = errors.New("db: not found")
	// ErrSchemaMismatch: a table's layout matches no known schema version.
	ErrSchemaMismatch = errors.New("db: schema mismatch")
	// ErrMigrationRequired: the database is from an older Agno/Agentry version
	// (e.g. 2.x, runs inside the sessions table). errors.Is(err, ErrSchemaMismatch)
	// also holds.
	// The message names no runnable command on its own: run without --db, it
	// would migrate another database (./agentry.db). The CLI adds the exact one.
	ErrMigrationRequired = fmt.Errorf("%w: migration required: run `agentry migrate up --db DSN` with this database's DSN", ErrSchemaMismatch)
	// ErrInvalidFilter: a query's filter is invalid (missing limit, page < 1,
	// unknown sort column).
	ErrInvalidFilter = errors.New("db: invalid filter")
	// ErrInvalidRecord: a record to write is missing a required field, is
	// over a bound (MaxUserIDBytes, MaxMemoryTopics), or holds a value the
	// backend's column cannot hold (MySQL's VARCHAR(255) ids and names).
	ErrInvalidRecord = errors.New("db: invalid record")
	// ErrCorruptRow: a stored row cannot be decoded.
	ErrCorruptRow = errors.New("db: corrupt row")
	// ErrUnavailable: the database did not answer within the query timeout,
	// refused the connection or lost it mid-call. A write that failed so may
	// or may not have taken effect (upserts are safe to repeat); retrying
	// later is the remedy.
	ErrUnavailable = errors.New("db: the database is unavailable; retry later")
	// ErrInvalidConfig: a store's configuration cannot be used (a required
	// field missing, a DSN of another dialect, table names a server would
	// not keep apart). Nothing was opened or created.
	ErrInvalidConfig = errors.New("db: invalid config")
	// ErrSessionChanged: a conditional session write (Session.Expect) found
	// the stored row changed since the writer read it (or created, or
	// deleted): nothing of the write was written. The writer reads the row
	// again, applies its changes to it and writes again.
	ErrSessionChanged = errors.New("db: the session changed since it was read")
)

// ConfigError returns an error reading fmt.Sprintf(format, args...) that
// is ErrInvalidConfig to errors.Is, and unwraps to the args' %w errors as
// fmt.Errorf does. Drivers and tools refusing a configuration return it,
// so callers can tell a bad configuration from a database that failed.
func ConfigError(format string, args ...any) error {
	return &configError{fmt.Errorf(format, args...)}
}

type configError struct{ err error }

func (e *configError) Error() string   { return e.err.Error() }
func (e *configError) Unwrap() []error { return []error{ErrInvalidConfig, e.err} }

// CorruptRowError names the row that failed to decode. It unwraps to ErrCorruptRow.
type CorruptRowError struct {
	Table string
	ID    string
	Err   error
}

func (e *CorruptRowError) Error() string {
	return fmt.Sprintf("db: corrupt row %s in %s: %v", e.ID, e.Table, e.Err)
}

func (e *CorruptRowError) Unwrap() []error { return []error{ErrCorruptRow, e.Err} }
