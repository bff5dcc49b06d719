package db

import "context"

// RunKeeper is an optional Driver ability of a store that keeps the rows it
// is given as values in memory (db/memory). UpsertRun and SaveRun copy the
// rows they are handed, since their callers still hold them; through
// SaveRunOwned the front hands a RunKeeper rows nobody else holds (a
// caller's handed-over rows, validated and stamped in place), and the driver
// keeps them as they are and returns them: one allocation of the run row per
// write instead of four (the caller's, the front's copy, the driver's, and
// the copy it returned).
//
// The rows a RunKeeper returns may be its stored values (it replaces a
// stored row on write and never changes one in place): the caller of
// SaveRunOwned reads them and changes nothing.
type RunKeeper interface {
	// KeepRun is UpsertRun with a row that is the driver's from now on.
	KeepRun(ctx context.Context, r *Run) (*Run, error)
	// KeepSessionRun is RunSaver.SaveRun with rows that are the driver's
	// from now on.
	KeepSessionRun(ctx context.Context, s *Session, r *Run) (*Session, *Run, error)
}

// SaveRunOwned is SaveRun for rows the caller hands over (both usually built
// for this call, as db.RunFromOutput builds r): s and r become the store's,
// and the caller must neither read nor change them afterwards (it reads the
// returned rows). The front validates and stamps them in place and a
// RunKeeper keeps them, where SaveRun copies both to leave the caller's rows
// as they were. Pointers inside the rows (RunIndex, the JSON bytes) are
// still read, not kept, except for a run's run_data when it is CheckedJSON.
// The returned rows may be the store's own values (RunKeeper): read them,
// change nothing in them.
func (d *DB) SaveRunOwned(ctx context.Context, s *Session, r *Run) (*Session, *Run, error) {
	if d.keeper == nil || writeFence(ctx) != nil {
		return d.SaveRun(ctx, s, r)
	}
	if s != nil {
		if err := d.checkSession(s); err != nil {
			return nil, nil, err
		}
		if err := d.stampSession(ctx, s); err != nil {
			return nil, nil, err
		}
	}
	if err := checkRun(r); err != nil {
		return nil, nil, err
	}
	if err := d.stampRun(ctx, r); err != nil {
		return nil, nil, err
	}
	// A keeper is in process (see Wrap): no deadline, and no acknowledgement
	// a lost connection could swallow, so nothing to check after a failure.
	_, call := d.bound(ctx)
	if s == nil {
		out, err := d.keeper.KeepRun(ctx, r)
		return nil, out, call.done(err)
	}
	if r.SessionID != s.SessionID {
		return nil, nil, errSessionMismatch(r, s)
	}
	so, ro, err := d.keeper.KeepSessionRun(ctx, s, r)
	return so, ro, call.done(err)
}
