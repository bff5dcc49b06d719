package memory

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/agentryhq/agentry/db"
)

// ErrClosed is returned by every call after Close.
var ErrClosed = errors.New("memory: driver is closed")

// Driver is an in-memory db.Driver. The zero value is not usable; call New.
// Records are copied in and out, so callers never share memory with the store.
// It is safe for concurrent use.
type Driver struct {
	mu sync.RWMutex
	// runlock and unlock are mu's RUnlock and Unlock, bound once in New:
	// read and write return them without allocating a method value per call.
	runlock, unlock func()
	closed          bool
	sessions        map[string]*db.Session
	runs            map[string]*db.Run
	// sessionRuns indexes runs by session for run_index assignment, history
	// and cascade.
	sessionRuns map[string]*sessionRuns
	memories    map[string]*db.Memory
	files       map[fileKey]*db.File
	toolResults map[string]*db.ToolResult
	// journal holds the step journal, by run id.
	journal   map[string]*runJournal
	learnings map[string]*db.Learning
	// control holds the control-plane tables (control.go).
	control   control
	approvals map[string]*db.Approval
	// comps is the component registry (components.go).
	comps memComponents
	// tr holds the stored traces (traces.go).
	tr memTraces
	// slots holds free run_index slots of kept runs (indexSlot).
	slots []int64
}

var (
	_ db.Driver                  = (*Driver)(nil)
	_ db.RunSaver                = (*Driver)(nil)
	_ db.SessionHistoryRefReader = (*Driver)(nil)
	_ db.RunKeeper               = (*Driver)(nil)
)

// New returns an empty store.
func New() *Driver {
	d := &Driver{
		sessions:    map[string]*db.Session{},
		runs:        map[string]*db.Run{},
		sessionRuns: map[string]*sessionRuns{},
		memories:    map[string]*db.Memory{},
		files:       map[fileKey]*db.File{},
		toolResults: map[string]*db.ToolResult{},
		journal:     map[string]*runJournal{},
		learnings:   map[string]*db.Learning{},
		approvals:   map[string]*db.Approval{},
	}
	d.runlock, d.unlock = d.mu.RUnlock, d.mu.Unlock
	return d
}

// Dialect is "memory".
func (d *Driver) Dialect() string { return "memory" }

// Close drops all data; later calls return ErrClosed. Closing twice is a no-op.
func (d *Driver) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.closed = true
	d.sessions, d.runs, d.sessionRuns, d.memories, d.files, d.toolResults, d.journal, d.learnings, d.approvals = nil, nil, nil, nil, nil, nil, nil, nil, nil
	return nil
}

// read and write take the lock after checking the context and that the store is
// open; the returned function releases it.
// InProcess reports true: calls take a lock and copy values, no I/O (see
// db.InProcess).
func (d *Driver) InProcess() bool { return true }

func (d *Driver) read(ctx context.Context) (func(), error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	d.mu.RLock()
	if d.closed {
		d.mu.RUnlock()
		return nil, ErrClosed
	}
	return d.runlock, nil
}

func (d *Driver) write(ctx context.Context) (func(), error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return nil, ErrClosed
	}
	return d.unlock, nil
}

// visible reports whether a row owned by owner is in the context's user scope.
// As in SQL (user_id = ?), an unowned row (NULL) is in no user's scope.
func visible(ctx context.Context, owner string) bool {
	u, ok := db.UserScope(ctx)
	return !ok || (owner != "" && owner == u)
}

// writable reports whether an upsert by writer may update a row owned by owner:
// the stored user_id is NULL or equals the writer's.
func writable(owner, writer string) bool {
	return owner == "" || (writer != "" && owner == writer)
}

// writer is the user a write acts as: the scope when set, else the record's.
func writer(ctx context.Context, recordUser string) string {
	if u, ok := db.UserScope(ctx); ok {
		return u
	}
	return recordUser
}

// jsonColumn normalises a JSON column as SQL drivers read it back: empty and
// JSON null become empty (NULL); anything else must be valid JSON and is copied.
func jsonColumn(table, id, col string, raw json.RawMessage) (json.RawMessage, error) {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 || string(t) == "null" {
		return nil, nil
	}
	if !json.Valid(t) {
		return nil, fmt.Errorf("%w: %s %s: %s is not valid JSON", db.ErrInvalidRecord, table, id, col)
	}
	return bytes.Clone(t), nil
}

// viewRun returns a stored run to a caller: stored runs are immutable values
// (an update stores a new one), so the copy shares run_data, which callers
// must not modify in place (appending reallocates: it is a full slice); only
// the run_index pointer is the caller's own. The copy and its run_index are
// one allocation; callers that copy the result into a slice use
// viewRunValue instead.
func viewRun(r *db.Run) *db.Run {
	v := &struct {
		run db.Run
		idx int64
	}{run: *r}
	if r.RunIndex != nil {
		v.idx = *r.RunIndex
		v.run.RunIndex = &v.idx
	}
	return &v.run
}

// viewRunValue is viewRun as a value.
func viewRunValue(r *db.Run) db.Run {
	cp := *r
	if r.RunIndex != nil {
		i := *r.RunIndex
		cp.RunIndex = &i
	}
	return cp
}

func cloneMemory(m *db.Memory) *db.Memory {
	cp := *m
	cp.Topics = slices.Clone(m.Topics)
	return &cp
}

// page returns the slice of xs for a 1-based page; empty, never nil, past the end.
func page[T any](xs []T, limit, pageNo int) []T {
	start := limit * (pageNo - 1)
	if pageNo < 1 || start >= len(xs) || start < 0 {
		return []T{}
	}
	return xs[start:min(start+limit, len(xs))]
}

// cmpDir applies a sort order to a comparison result.
func cmpDir(c int, order string) int {
	if order == db.Desc {
		return -c
	}
	return c
}

// sessionRuns are the runs of one session, in history order (run_index,
// created_at, run_id: runs' sort keys never change once stored), and their
// highest run_index. A run replaced by an update is replaced here too.
type sessionRuns struct {
	order []*db.Run
	// refs[i] is order[i]'s history ref. A history read that selects a
	// whole tail hands out refs[from:n:n] itself (read-only callers) and
	// sets lent: a write that would change a slot in place (an update, an
	// insert before the newest run, a delete) then works on a copy, so a
	// lent slice never changes. Appending a newest run writes a slot no
	// lent slice reaches (their capacity ends at their length).
	refs []db.HistoryRef
	lent atomic.Bool // set under the read lock, read under the write lock
	// max is the highest run_index, or -1 when no run has one.
	max int64
}
