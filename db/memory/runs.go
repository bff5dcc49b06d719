package memory

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/agentryhq/agentry/db"
)

// UpsertRun inserts one run, assigning run_index = max+1 within its session
// when nil, or updates status, run_data, user_id, parent_run_id and updated_at
// of an existing run, keeping its run_index and created_at. Under a user scope,
// another user's run is ErrNotFound and stays unchanged. As with the SQL foreign
// key, the session must exist (ErrInvalidRecord otherwise).
func (d *Driver) UpsertRun(ctx context.Context, in *db.Run) (*db.Run, error) {
	return d.upsertRun(ctx, in, false)
}

// KeepRun is UpsertRun storing in itself (db.RunKeeper: the front hands over
// a row nobody else holds).
func (d *Driver) KeepRun(ctx context.Context, in *db.Run) (*db.Run, error) {
	return d.upsertRun(ctx, in, true)
}

func (d *Driver) upsertRun(ctx context.Context, in *db.Run, keep bool) (*db.Run, error) {
	r, idx, err := runToStore(ctx, in, keep)
	if err != nil {
		return nil, err
	}
	unlock, err := d.write(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	old, sr, err := d.runWritable(ctx, r, false)
	if err != nil {
		return nil, err
	}
	return d.putRun(r, old, sr, idx, keep), nil
}

// runToStore checks a run and returns the copy to store (in itself when
// keep: a row handed over, db.RunKeeper), written as the context's user, and
// where putRun writes a new run's run_index (nil: putRun takes a slot; the
// run has none when in has none).
func runToStore(ctx context.Context, in *db.Run, keep bool) (*db.Run, *int64, error) {
	if in == nil || in.RunID == "" {
		return nil, nil, fmt.Errorf("%w: run_id is required", db.ErrInvalidRecord)
	}
	if in.SessionID == "" {
		return nil, nil, fmt.Errorf("%w: session_id is required for run %s", db.ErrInvalidRecord, in.RunID)
	}
	given := in.RunIndex // read, never kept: it may be shared
	var r *db.Run
	var idx *int64
	if keep {
		r = in
	} else {
		// The run and its run_index in one allocation.
		v := &struct {
			run db.Run
			idx int64
		}{run: *in}
		r, idx = &v.run, &v.idx
	}
	r.RunIndex = nil
	r.UserID = writer(ctx, in.UserID)
	if in.CheckedJSON() {
		// Encoded by db.RunFromOutput: compact and valid, no scan needed,
		// and immutable by contract (CheckedJSON), so kept without a copy.
	} else {
		data, err := jsonColumn("run", r.RunID, "run_data", r.RunData)
		if err != nil {
			return nil, nil, err
		}
		if data == nil {
			return nil, nil, fmt.Errorf("%w: run_data is required for run %s", db.ErrInvalidRecord, r.RunID)
		}
		r.RunData = data
	}
	// Stored run_data is immutable and shared with readers; a full slice
	// makes a reader's append reallocate instead of writing into the store.
	r.RunData = r.RunData[:len(r.RunData):len(r.RunData)]
	if given != nil {
		if idx == nil {
			idx = new(int64) // a kept run that brings its run_index: rare
		}
		*idx = *given
		r.RunIndex = idx
	}
	return r, idx, nil
}

// runWritable reports ErrNotFound when r would overwrite another user's run
// under a scope, and ErrInvalidRecord when a new run's session is missing
// (unless sessionPending: it is being stored with the run). The caller holds
// the write lock. It returns the stored run r updates (nil: a new run) for
// putRun, and for a new run its session's index (nil: the session has no run
// yet), so that a save looks each map up once.
func (d *Driver) runWritable(ctx context.Context, r *db.Run, sessionPending bool) (*db.Run, *sessionRuns, error) {
	if old, ok := d.runs[r.RunID]; ok {
		// As in SQL, only a scope protects an owned run; unscoped callers
		// (the server itself, migrations) may reassign it.
		if u, scoped := db.UserScope(ctx); scoped && old.UserID != "" && old.UserID != u {
			return nil, nil, fmt.Errorf("%w: run %s", db.ErrNotFound, r.RunID)
		}
		return old, nil, nil
	}
	// A session with an index has a run, so it exists: deleting a session
	// deletes its index, and its last run's deletion too.
	sr := d.sessionRuns[r.SessionID]
	if sr == nil && !sessionPending {
		if _, ok := d.sessions[r.SessionID]; !ok {
			return nil, nil, fmt.Errorf("%w: run %s: session %s does not exist (store the session first)", db.ErrInvalidRecord, r.RunID, r.SessionID)
		}
	}
	return nil, sr, nil
}

// putRun inserts r with the next run_index when it has none, or updates the
// stored run's status, run_data, user_id, parent_run_id and updated_at; it
// returns a copy of the stored run, or when shared the stored run itself
// (db.RunKeeper: its caller only reads it; stored runs are replaced on
// write, never changed in place). The caller holds the write lock and
// checked runWritable, which found old (nil: r is new) and a new run's
// session index sr (nil: none yet); a new run without a run_index gets the
// next one in idx (from runToStore; nil: a slot).
func (d *Driver) putRun(r, old *db.Run, sr *sessionRuns, idx *int64, shared bool) *db.Run {
	if old != nil {
		upd := *old // a new value: readers may hold the old one
		upd.Status, upd.RunData, upd.UserID, upd.ParentRunID, upd.UpdatedAt = r.Status, r.RunData, r.UserID, r.ParentRunID, r.UpdatedAt
		d.runs[r.RunID] = &upd
		if sr := d.sessionRuns[old.SessionID]; sr != nil {
			if i, ok := sr.find(old); ok {
				sr.order[i] = &upd
				sr.ownRefs()[i] = refOf(&upd)
			}
		}
		if shared {
			return &upd
		}
		return viewRun(&upd)
	}
	if sr == nil {
		sr = &sessionRuns{max: -1}
		d.sessionRuns[r.SessionID] = sr
	}
	if r.RunIndex == nil {
		if idx == nil {
			idx = d.indexSlot()
		}
		*idx = sr.max + 1 // max(run_index)+1, atomic under the write lock
		r.RunIndex = idx
	}
	d.runs[r.RunID] = r
	sr.add(r)
	if shared {
		return r
	}
	return viewRun(r)
}

// indexSlot returns where a kept run's assigned run_index lives: slots are
// taken from a block shared by 64 runs, one allocation for all of them
// instead of one per run. The caller holds the write lock.
func (d *Driver) indexSlot() *int64 {
	if len(d.slots) == 0 {
		d.slots = make([]int64, 64)
	}
	p := &d.slots[0]
	d.slots = d.slots[1:]
	return p
}

// SaveRun stores a session and one of its runs under one lock: both checks
// pass before either is written.
func (d *Driver) SaveRun(ctx context.Context, s *db.Session, r *db.Run) (*db.Session, *db.Run, error) {
	return d.saveRun(ctx, s, r, false)
}

// KeepSessionRun is SaveRun storing s and r themselves (db.RunKeeper: the
// front hands over rows nobody else holds).
func (d *Driver) KeepSessionRun(ctx context.Context, s *db.Session, r *db.Run) (*db.Session, *db.Run, error) {
	return d.saveRun(ctx, s, r, true)
}

func (d *Driver) saveRun(ctx context.Context, s *db.Session, r *db.Run, keep bool) (*db.Session, *db.Run, error) {
	sc, err := sessionToStore(ctx, s, keep)
	if err != nil {
		return nil, nil, err
	}
	rc, idx, err := runToStore(ctx, r, keep)
	if err != nil {
		return nil, nil, err
	}
	if rc.SessionID != sc.SessionID {
		return nil, nil, fmt.Errorf("%w: run %s is in session %s, not %s", db.ErrInvalidRecord, rc.RunID, rc.SessionID, sc.SessionID)
	}
	unlock, err := d.write(ctx)
	if err != nil {
		return nil, nil, err
	}
	defer unlock()
	olds, err := d.sessionWritable(sc)
	if err != nil {
		return nil, nil, err
	}
	old, sr, err := d.runWritable(ctx, rc, true)
	if err != nil {
		return nil, nil, err
	}
	so := d.putSession(sc, olds)
	if !keep {
		so = so.Clone()
	}
	return so, d.putRun(rc, old, sr, idx, keep), nil
}

// add records a stored run of the session in its index.
func (sr *sessionRuns) add(r *db.Run) {
	if n := len(sr.order); n == 0 || historyOrder(sr.order[n-1], r) < 0 {
		sr.order = append(sr.order, r) // the usual case: the session's newest run
		sr.refs = append(sr.refs, refOf(r))
	} else {
		i, _ := sr.find(r)
		sr.order = slices.Insert(sr.order, i, r)
		sr.refs = slices.Insert(sr.ownRefs(), i, refOf(r))
	}
	if r.RunIndex != nil && *r.RunIndex > sr.max {
		sr.max = *r.RunIndex
	}
}

// remove deletes the i-th run of the session's index.
func (sr *sessionRuns) remove(i int) {
	sr.order = slices.Delete(sr.order, i, i+1)
	sr.refs = slices.Delete(sr.ownRefs(), i, i+1)
}

// ownRefs returns refs for a change in place: a copy when a history read
// holds a part of it. The caller holds the write lock.
func (sr *sessionRuns) ownRefs() []db.HistoryRef {
	if sr.lent.Load() {
		sr.refs = slices.Clone(sr.refs)
		sr.lent.Store(false)
	}
	return sr.refs
}

// refOf is r's history ref.
func refOf(r *db.Run) db.HistoryRef {
	return db.HistoryRef{RunID: r.RunID, UpdatedAt: r.UpdatedAt, RunData: r.RunData}
}

// historyOrder is the order of sessionRuns.order.
var historyOrder = runOrder("run_index", db.Asc)

// find returns where r is (ok) or would be in the session's order.
func (sr *sessionRuns) find(r *db.Run) (int, bool) {
	return slices.BinarySearchFunc(sr.order, r, historyOrder)
}

// GetRun returns a run in scope or ErrNotFound.
func (d *Driver) GetRun(ctx context.Context, runID string) (*db.Run, error) {
	unlock, err := d.read(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	r, ok := d.runs[runID]
	if !ok || !visible(ctx, r.UserID) {
		return nil, fmt.Errorf("%w: run %s", db.ErrNotFound, runID)
	}
	return viewRun(r), nil
}

// GetRuns returns one page of runs in scope; the count is the total when
// f.WithTotal, else -1.
func (d *Driver) GetRuns(ctx context.Context, f db.RunFilter) ([]db.Run, int, error) {
	unlock, err := d.read(ctx)
	if err != nil {
		return nil, 0, err
	}
	defer unlock()
	var match []*db.Run
	for _, r := range d.candidates(f.SessionID) {
		switch {
		case !visible(ctx, r.UserID),
			f.SessionID != "" && r.SessionID != f.SessionID,
			f.UserID != "" && r.UserID != f.UserID,
			f.AgentID != "" && r.AgentID != f.AgentID,
			f.TeamID != "" && r.TeamID != f.TeamID,
			f.WorkflowID != "" && r.WorkflowID != f.WorkflowID,
			f.ParentRunID != "" && r.ParentRunID != f.ParentRunID,
			f.RunType != "" && r.RunType != f.RunType,
			len(f.Statuses) > 0 && !slices.Contains(f.Statuses, r.Status):
			continue
		}
		match = append(match, r)
	}
	slices.SortFunc(match, runOrder(f.SortBy, f.SortOrder))
	total := -1
	if f.WithTotal {
		total = len(match) // the cursor narrows the page, not the total
	}
	if f.AfterRunIndex != nil {
		after, desc := *f.AfterRunIndex, f.SortOrder == db.Desc
		match = slices.DeleteFunc(match, func(r *db.Run) bool {
			return r.RunIndex == nil || (!desc && *r.RunIndex <= after) || (desc && *r.RunIndex >= after)
		})
	}
	out := []db.Run{}
	for _, r := range page(match, f.Limit, f.Page) {
		out = append(out, viewRunValue(r))
	}
	return out, total, nil
}

// candidates are the runs of one session when sessionID is set, else all runs.
func (d *Driver) candidates(sessionID string) []*db.Run {
	var out []*db.Run
	if sessionID == "" {
		out = make([]*db.Run, 0, len(d.runs))
		for _, r := range d.runs {
			out = append(out, r)
		}
		return out
	}
	sr := d.sessionRuns[sessionID]
	if sr == nil {
		return nil
	}
	return slices.Clone(sr.order)
}

// runOrder sorts as the SQL drivers do: run_index then created_at, or
// created_at/updated_at then run_index; run_id last; all in one direction.
func runOrder(sortBy, order string) func(a, b *db.Run) int {
	return func(a, b *db.Run) int {
		var c int
		switch sortBy {
		case "created_at":
			c = cmp.Or(cmp.Compare(a.CreatedAt, b.CreatedAt), cmp.Compare(runIndex(a), runIndex(b)))
		case "updated_at":
			c = cmp.Or(cmp.Compare(a.UpdatedAt, b.UpdatedAt), cmp.Compare(runIndex(a), runIndex(b)))
		default:
			c = cmp.Or(cmp.Compare(runIndex(a), runIndex(b)), cmp.Compare(a.CreatedAt, b.CreatedAt))
		}
		return cmpDir(cmp.Or(c, cmp.Compare(a.RunID, b.RunID)), order)
	}
}

func runIndex(r *db.Run) int64 {
	if r.RunIndex == nil {
		return -1
	}
	return *r.RunIndex
}

// HistoryRuns returns the last q.Limit runs of a session in scope whose status
// feeds history (not PAUSED, CANCELLED, ERROR or REGENERATED) and that have no
// parent run, oldest first.
func (d *Driver) HistoryRuns(ctx context.Context, q db.HistoryQuery) ([]db.Run, error) {
	unlock, err := d.read(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	match := d.history(ctx, q)
	out := make([]db.Run, len(match))
	idx := make([]int64, len(match)) // the callers' own run_index values, one block
	for i, r := range match {
		out[i] = *r
		if r.RunIndex != nil {
			idx[i] = *r.RunIndex
			out[i].RunIndex = &idx[i]
		}
	}
	return out, nil
}

// HistoryRefs is HistoryRuns as refs (db.HistoryRefReader); run_data is
// shared, as in HistoryRuns, and Cached is ignored for the same reason.
func (d *Driver) HistoryRefs(ctx context.Context, q db.HistoryQuery) ([]db.HistoryRef, error) {
	unlock, err := d.read(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	if q.SessionID == "" {
		match := d.historyAll(ctx, q)
		out := make([]db.HistoryRef, len(match))
		for i, r := range match {
			out[i] = db.HistoryRef{RunID: r.RunID, UpdatedAt: r.UpdatedAt, RunData: r.RunData}
		}
		return out, nil
	}
	return d.sessionRefs(ctx, q), nil
}

// sessionRefs is the refs of a session's history runs. The caller holds the
// read lock. A read-only caller (q.ReadOnlySession) whose query selects
// every run of the tail gets the session's own refs (sessionRuns.refs).
func (d *Driver) sessionRefs(ctx context.Context, q db.HistoryQuery) []db.HistoryRef {
	f := newHistoryFilter(ctx, &q)
	runs, n := d.sessionHistory(&f)
	if n == len(runs) && n > 0 && q.ReadOnlySession {
		sr := d.sessionRuns[q.SessionID]
		sr.lent.Store(true)
		end := len(sr.refs)
		return sr.refs[end-n : end : end]
	}
	out := make([]db.HistoryRef, 0, n)
	for _, r := range runs {
		if f.selects(r) {
			out = append(out, db.HistoryRef{RunID: r.RunID, UpdatedAt: r.UpdatedAt, RunData: r.RunData})
		}
	}
	return out
}

// SessionHistoryRefs is GetSession and HistoryRefs under one read lock
// (db.SessionHistoryRefReader): a session out of scope or missing is
// ErrNotFound, as GetSession.
func (d *Driver) SessionHistoryRefs(ctx context.Context, q db.HistoryQuery) (*db.Session, []db.HistoryRef, error) {
	unlock, err := d.read(ctx)
	if err != nil {
		return nil, nil, err
	}
	defer unlock()
	s, ok := d.sessions[q.SessionID]
	if !ok || !visible(ctx, s.UserID) {
		return nil, nil, fmt.Errorf("%w: session %s", db.ErrNotFound, q.SessionID)
	}
	if !q.ReadOnlySession {
		s = s.Clone()
	}
	return s, d.sessionRefs(ctx, q), nil
}

// history returns the stored runs a HistoryQuery selects, oldest first. The
// caller holds the read lock.
func (d *Driver) history(ctx context.Context, q db.HistoryQuery) []*db.Run {
	if q.SessionID == "" {
		return d.historyAll(ctx, q)
	}
	f := newHistoryFilter(ctx, &q)
	runs, n := d.sessionHistory(&f)
	match := make([]*db.Run, 0, n)
	for _, r := range runs {
		if f.selects(r) {
			match = append(match, r)
		}
	}
	return match
}

// sessionHistory returns the tail of the session's runs (in history order)
// that holds the n runs a HistoryQuery selects, found by walking back from
// the newest until the limit, so a turn reads its last runs only; the
// caller filters the tail with f.
func (d *Driver) sessionHistory(f *historyFilter) (tail []*db.Run, n int) {
	q := f.q
	sr := d.sessionRuns[q.SessionID]
	if sr == nil {
		return nil, 0
	}
	from := len(sr.order)
	for i := len(sr.order) - 1; i >= 0 && (q.Limit <= 0 || n < q.Limit); i-- {
		if f.selects(sr.order[i]) {
			from, n = i, n+1
		}
	}
	return sr.order[from:], n
}

// historyAll is history over every session's runs.
func (d *Driver) historyAll(ctx context.Context, q db.HistoryQuery) []*db.Run {
	f := newHistoryFilter(ctx, &q)
	cands := d.candidates(q.SessionID)
	match := cands[:0] // filtered in place: candidates is this call's own slice
	for _, r := range cands {
		if f.selects(r) {
			match = append(match, r)
		}
	}
	slices.SortFunc(match, historyOrder)
	if q.Limit > 0 && len(match) > q.Limit {
		match = match[len(match)-q.Limit:]
	}
	return match
}

// historyFilter is a HistoryQuery with the context's user scope looked up
// once: a lookup walks the run's whole context chain, and a turn's query
// tests every run of its history.
type historyFilter struct {
	q      *db.HistoryQuery
	user   string
	scoped bool
}

func newHistoryFilter(ctx context.Context, q *db.HistoryQuery) historyFilter {
	u, scoped := db.UserScope(ctx)
	return historyFilter{q: q, user: u, scoped: scoped}
}

// selects reports whether the query selects r.
func (f *historyFilter) selects(r *db.Run) bool {
	q := f.q
	switch {
	case f.scoped && (r.UserID == "" || r.UserID != f.user),
		r.ParentRunID != "" && !q.MemberRuns,
		!r.Status.InHistory(),
		q.AgentID != "" && r.AgentID != q.AgentID,
		q.TeamID != "" && r.TeamID != q.TeamID:
		return false
	}
	return true
}

// DeleteRun deletes one run in scope; ErrNotFound otherwise.
func (d *Driver) DeleteRun(ctx context.Context, runID string) error {
	unlock, err := d.write(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	r, ok := d.runs[runID]
	if !ok || !visible(ctx, r.UserID) {
		return fmt.Errorf("%w: run %s", db.ErrNotFound, runID)
	}
	delete(d.runs, runID)
	sr := d.sessionRuns[r.SessionID]
	if i, ok := sr.find(r); ok {
		sr.remove(i)
	}
	switch {
	case len(sr.order) == 0:
		delete(d.sessionRuns, r.SessionID)
	case r.RunIndex != nil && *r.RunIndex == sr.max:
		// max+1 must follow the remaining runs, as a SQL MAX() would.
		sr.max = -1
		for _, o := range sr.order {
			if i := o.RunIndex; i != nil && *i > sr.max {
				sr.max = *i
			}
		}
	}
	return nil
}

// FirstRuns returns the first top-level run of each session in scope (see
// db.FirstRunReader).
func (d *Driver) FirstRuns(ctx context.Context, sessionIDs []string) (map[string]db.Run, error) {
	unlock, err := d.read(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	order := runOrder("run_index", db.Asc)
	out := make(map[string]db.Run, len(sessionIDs))
	for _, id := range sessionIDs {
		s, ok := d.sessions[id]
		if !ok || !visible(ctx, s.UserID) {
			continue
		}
		var first *db.Run
		for _, r := range d.candidates(id) {
			if r.ParentRunID != "" || r.RunType != s.SessionType || !visible(ctx, r.UserID) {
				continue
			}
			if first == nil || order(r, first) < 0 {
				first = r
			}
		}
		if first != nil {
			out[id] = viewRunValue(first)
		}
	}
	return out, nil
}
