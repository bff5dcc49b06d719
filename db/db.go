package db

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Bounds every write checks (ErrInvalidRecord beyond them). The SQL drivers
// store ids in VARCHAR(255) columns on MySQL; Agno's own MySQL tables use
// VARCHAR(128) for user_id, so ids meant for both stay within 128.
const (
	// MaxUserIDBytes bounds a record's user_id, in bytes.
	MaxUserIDBytes = 255
	// MaxMemoryTopics bounds the topics of one memory.
	MaxMemoryTopics = 100
)

// checkUserID applies MaxUserIDBytes to the user id a record is written as,
// and refuses a record id or user id ending in a space (checkNotPadded).
func checkUserID(kind, id, userID string) error {
	if len(userID) > MaxUserIDBytes {
		return fmt.Errorf("%w: user_id of %s %s is %d bytes; the limit is %d", ErrInvalidRecord, kind, id, len(userID), MaxUserIDBytes)
	}
	// The descriptions are built only for an error: a save checks on
	// every call.
	if strings.HasSuffix(id, " ") {
		return checkNotPadded(kind+" id", id)
	}
	if strings.HasSuffix(userID, " ") {
		return checkNotPadded("user_id of "+kind+" "+id, userID)
	}
	return nil
}

// checkNotPadded refuses a key (an id, a user id) that ends in a space.
// MySQL compares VARCHAR with PAD SPACE collations, utf8mb4_bin included:
// "s1 " and "s1" are one primary key there, so the second write would
// overwrite the first, and "alice " one user with "alice" in the unique
// keys holding a user_id (schedule names, metrics). Refused on every
// backend, so that rows written on one can move to another
// (docs/adr/exact-keys-on-mysql.md).
func checkNotPadded(what, key string) error {
	if strings.HasSuffix(key, " ") {
		return fmt.Errorf("%w: %s %q ends in a space (MySQL would take it for the same key without the space)", ErrInvalidRecord, what, key)
	}
	return nil
}

// DB is the concrete storage front the rest of Agentry holds. It owns policy
// common to every backend: filter validation, required fields, timestamps and
// the user scope on writes. Drivers own SQL.
//
// Every call is bounded by the query timeout: waiting for a pooled
// connection and running the statements. A call that hits it, or whose
// connection is refused or lost, fails with ErrUnavailable.
type DB struct {
	// ID names the database in AgentOS (db_id).
	ID     string
	driver Driver
	// saver is the driver's RunSaver ability, nil when it has none.
	saver RunSaver
	// keeper is the driver's RunKeeper ability, nil when it has none.
	keeper  RunKeeper
	now     func() time.Time
	timeout time.Duration
	// inProcess: the driver reports InProcess; its calls get no deadline.
	inProcess bool
	// deadlines fires the bounded calls' query timeouts.
	deadlines *deadlines
}

// Config configures the front. Zero values take the documented defaults.
type Config struct {
	// ID is the db_id AgentOS reports; empty means the driver's dialect.
	ID string
	// QueryTimeout bounds each call to the driver; zero means
	// DefaultQueryTimeout, negative no bound (a stalled database then
	// blocks its callers until their own contexts end).
	QueryTimeout time.Duration
}

// New wraps a driver with the default configuration. id is the db_id
// AgentOS reports; empty means the dialect.
func New(id string, d Driver) *DB { return Wrap(d, Config{ID: id}) }

// Wrap wraps a driver in the front.
func Wrap(d Driver, cfg Config) *DB {
	if cfg.ID == "" {
		cfg.ID = d.Dialect()
	}
	if cfg.QueryTimeout == 0 {
		cfg.QueryTimeout = DefaultQueryTimeout
	}
	saver, _ := d.(RunSaver)
	ip, _ := d.(InProcess)
	inProcess := ip != nil && ip.InProcess()
	keeper, _ := d.(RunKeeper)
	if !inProcess {
		keeper = nil // SaveRunOwned skips the deadline and the landed check
	}
	return &DB{ID: cfg.ID, driver: d, saver: saver, keeper: keeper, now: time.Now, timeout: cfg.QueryTimeout,
		inProcess: inProcess, deadlines: &deadlines{}}
}

// QueryTimeout returns the bound of each call (negative: none).
func (d *DB) QueryTimeout() time.Duration { return d.timeout }

// Driver returns the backend, for optional-interface checks.
func (d *DB) Driver() Driver { return d.driver }

// Close closes the backend.
func (d *DB) Close() error { return d.driver.Close() }

// scopeUser applies the context's user scope to a record's user id: a scoped
// caller always writes as itself.
func scopeUser(ctx context.Context, userID *string) {
	if u, ok := UserScope(ctx); ok {
		*userID = u
	}
}

// prepareWrite applies the caller's scope and the timestamps every written
// record gets: created_at once, updated_at on every write.
func (d *DB) prepareWrite(ctx context.Context, userID *string, createdAt, updatedAt *int64) {
	scopeUser(ctx, userID)
	now := d.now().Unix()
	if *createdAt == 0 {
		*createdAt = now
	}
	*updatedAt = now
}

// UpsertSession validates and stores a session.
func (d *DB) UpsertSession(ctx context.Context, s *Session) (*Session, error) {
	cp, err := d.sessionToWrite(ctx, s)
	if err != nil {
		return nil, err
	}
	ctx, call := d.bound(ctx)
	out, err := d.driver.UpsertSession(ctx, cp)
	return out, call.done(err)
}

// sessionToWrite validates a session and returns the copy a driver stores.
func (d *DB) sessionToWrite(ctx context.Context, s *Session) (*Session, error) {
	if err := d.checkSession(s); err != nil {
		return nil, err
	}
	cp := *s
	if err := d.stampSession(ctx, &cp); err != nil {
		return nil, err
	}
	return &cp, nil
}

// checkSession validates the columns a session row needs.
func (d *DB) checkSession(s *Session) error {
	if s == nil || s.SessionID == "" {
		return fmt.Errorf("%w: session_id is required", ErrInvalidRecord)
	}
	if s.SessionType == "" {
		return fmt.Errorf("%w: session_type is required", ErrInvalidRecord)
	}
	return nil
}

// stampSession writes the scope's user and the timestamps into the session
// row a driver stores (a copy, or a row handed over: SaveRunOwned).
func (d *DB) stampSession(ctx context.Context, s *Session) error {
	d.prepareWrite(ctx, &s.UserID, &s.CreatedAt, &s.UpdatedAt)
	return checkUserID("session", s.SessionID, s.UserID)
}

// GetSession returns a session or ErrNotFound.
func (d *DB) GetSession(ctx context.Context, sessionID string) (*Session, error) {
	ctx, call := d.bound(ctx)
	out, err := d.driver.GetSession(ctx, sessionID)
	return out, call.done(err)
}

// ListSessions validates the filter and returns a page and the total count.
func (d *DB) ListSessions(ctx context.Context, f SessionFilter) ([]Session, int, error) {
	if err := checkPage(f.Limit, f.Page, &f.SortBy, &f.SortOrder, SessionSortColumns, Desc); err != nil {
		return nil, 0, err
	}
	scopeUser(ctx, &f.UserID)
	ctx, call := d.bound(ctx)
	out, n, err := d.driver.ListSessions(ctx, f)
	return out, n, call.done(err)
}

// DeleteSessions deletes sessions of the caller's scope with their runs,
// their runs' step journals and approvals, their offloaded tool results
// (index rows and files), their traces and, on the SQL drivers, their
// durable-queue jobs and idempotency keys and their runs' event logs, in
// one transaction, and takes the session out of its schedule runs (see
// Driver); other ids are ignored. A durable job deleted while it runs
// is fenced: its run stores nothing more. What lives outside the database (media objects:
// media.DeleteSession) is the caller's to delete after it returns.
func (d *DB) DeleteSessions(ctx context.Context, sessionIDs ...string) error {
	if len(sessionIDs) == 0 {
		return nil
	}
	ctx, call := d.bound(ctx)
	return call.done(d.driver.DeleteSessions(ctx, sessionIDs...))
}

// UpsertRun validates and stores one run row. A write that fails with
// ErrUnavailable is checked once: if the run was stored after all (only its
// acknowledgement was lost), it is a success.
func (d *DB) UpsertRun(ctx context.Context, r *Run) (*Run, error) {
	if writeFence(ctx) != nil {
		_, out, err := d.SaveRunWith(ctx, nil, r, nil)
		return out, err
	}
	cp, err := d.runToWrite(ctx, r)
	if err != nil {
		return nil, err
	}
	bctx, call := d.bound(ctx)
	out, err := d.driver.UpsertRun(bctx, cp)
	if err = call.done(err); errors.Is(err, ErrUnavailable) {
		if stored, ok := d.landed(ctx, cp); ok {
			return stored, nil
		}
	}
	return out, err
}

// runToWrite validates a run row and returns the copy a driver stores.
func (d *DB) runToWrite(ctx context.Context, r *Run) (*Run, error) {
	if err := checkRun(r); err != nil {
		return nil, err
	}
	cp := *r
	if err := d.stampRun(ctx, &cp); err != nil {
		return nil, err
	}
	return &cp, nil
}

// checkRun validates the columns a run row needs.
func checkRun(r *Run) error {
	switch {
	case r == nil || r.RunID == "":
		return fmt.Errorf("%w: run_id is required", ErrInvalidRecord)
	case r.SessionID == "":
		return fmt.Errorf("%w: session_id is required for run %s", ErrInvalidRecord, r.RunID)
	case r.RunType == "":
		return fmt.Errorf("%w: run_type is required for run %s", ErrInvalidRecord, r.RunID)
	case len(r.RunData) == 0:
		return fmt.Errorf("%w: run_data is required for run %s", ErrInvalidRecord, r.RunID)
	}
	return nil
}

// stampRun writes the scope's user and the timestamps into the row a driver
// stores (a copy, or a row handed over: SaveRunOwned).
func (d *DB) stampRun(ctx context.Context, r *Run) error {
	d.prepareWrite(ctx, &r.UserID, &r.CreatedAt, &r.UpdatedAt)
	if strings.HasSuffix(r.SessionID, " ") {
		return checkNotPadded("session_id of run "+r.RunID, r.SessionID)
	}
	return checkUserID("run", r.RunID, r.UserID)
}

// GetRun returns a run or ErrNotFound.
func (d *DB) GetRun(ctx context.Context, runID string) (*Run, error) {
	ctx, call := d.bound(ctx)
	out, err := d.driver.GetRun(ctx, runID)
	return out, call.done(err)
}

// GetRuns validates the filter (Limit > 0, Page >= 1, known sort) and returns a
// page; the count is the total when f.WithTotal, else -1.
func (d *DB) GetRuns(ctx context.Context, f RunFilter) ([]Run, int, error) {
	if err := checkPage(f.Limit, f.Page, &f.SortBy, &f.SortOrder, RunSortColumns, Asc); err != nil {
		return nil, 0, err
	}
	if f.AfterRunIndex != nil && (f.SortBy != "run_index" || f.Page != 1) {
		return nil, 0, fmt.Errorf("%w: after_run_index needs sort by run_index and page 1", ErrInvalidFilter)
	}
	scopeUser(ctx, &f.UserID)
	ctx, call := d.bound(ctx)
	out, n, err := d.driver.GetRuns(ctx, f)
	return out, n, call.done(err)
}

// HistoryRuns returns the last q.Limit context runs of a session, oldest first.
func (d *DB) HistoryRuns(ctx context.Context, q HistoryQuery) ([]Run, error) {
	if q.SessionID == "" {
		return nil, fmt.Errorf("%w: session_id is required", ErrInvalidFilter)
	}
	if q.Limit <= 0 {
		return nil, fmt.Errorf("%w: limit must be positive, got %d", ErrInvalidFilter, q.Limit)
	}
	ctx, call := d.bound(ctx)
	out, err := d.driver.HistoryRuns(ctx, q)
	return out, call.done(err)
}

// DeleteRun deletes one run; ErrNotFound if absent or not in scope.
func (d *DB) DeleteRun(ctx context.Context, runID string) error {
	ctx, call := d.bound(ctx)
	return call.done(d.driver.DeleteRun(ctx, runID))
}

// UpsertMemory validates and stores a memory.
func (d *DB) UpsertMemory(ctx context.Context, m *Memory) (*Memory, error) {
	if m == nil || m.MemoryID == "" {
		return nil, fmt.Errorf("%w: memory_id is required", ErrInvalidRecord)
	}
	if m.Memory == "" {
		return nil, fmt.Errorf("%w: memory text is required", ErrInvalidRecord)
	}
	if len(m.Topics) > MaxMemoryTopics {
		return nil, fmt.Errorf("%w: memory %s has %d topics; the limit is %d", ErrInvalidRecord, m.MemoryID, len(m.Topics), MaxMemoryTopics)
	}
	cp := *m
	d.prepareWrite(ctx, &cp.UserID, &cp.CreatedAt, &cp.UpdatedAt)
	if err := checkUserID("memory", cp.MemoryID, cp.UserID); err != nil {
		return nil, err
	}
	ctx, call := d.bound(ctx)
	out, err := d.driver.UpsertMemory(ctx, &cp)
	return out, call.done(err)
}

// GetMemory returns a memory or ErrNotFound.
func (d *DB) GetMemory(ctx context.Context, memoryID string) (*Memory, error) {
	ctx, call := d.bound(ctx)
	out, err := d.driver.GetMemory(ctx, memoryID)
	return out, call.done(err)
}

// ListMemories validates the filter and returns a page and the total count.
func (d *DB) ListMemories(ctx context.Context, f MemoryFilter) ([]Memory, int, error) {
	if err := checkPage(f.Limit, f.Page, &f.SortBy, &f.SortOrder, MemorySortColumns, Desc); err != nil {
		return nil, 0, err
	}
	scopeUser(ctx, &f.UserID)
	ctx, call := d.bound(ctx)
	out, n, err := d.driver.ListMemories(ctx, f)
	return out, n, call.done(err)
}

// DeleteMemories deletes memories in scope; missing ids are ignored.
func (d *DB) DeleteMemories(ctx context.Context, memoryIDs ...string) error {
	if len(memoryIDs) == 0 {
		return nil
	}
	ctx, call := d.bound(ctx)
	return call.done(d.driver.DeleteMemories(ctx, memoryIDs...))
}

// MemoryTopics lists distinct topics in scope.
func (d *DB) MemoryTopics(ctx context.Context) ([]string, error) {
	ctx, call := d.bound(ctx)
	out, err := d.driver.MemoryTopics(ctx)
	return out, call.done(err)
}

// UserMemoryStats pages per-user memory counts.
func (d *DB) UserMemoryStats(ctx context.Context, limit, page int) ([]UserMemoryStats, int, error) {
	if limit <= 0 || page < 1 || PageOffsetOverflows(limit, page) {
		return nil, 0, fmt.Errorf("%w: limit must be positive and page >= 1 (and the page's offset an int64)", ErrInvalidFilter)
	}
	ctx, call := d.bound(ctx)
	out, n, err := d.driver.UserMemoryStats(ctx, limit, page)
	return out, n, call.done(err)
}
