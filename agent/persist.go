package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/internal/sessionline"
	"github.com/agentryhq/agentry/run"
)

// ErrStorage is wrapped by the error of a run whose session or history could
// not be read (the run then does not start) or which could not be stored.
// The database's own error is wrapped too; it may name the database's host
// and user, so servers log it rather than show it.
var ErrStorage = errors.New("agent: storage")

// storageErrorContent is the content of the RunError that replaces the
// terminal event of a run that could not be stored; it names no database.
const storageErrorContent = "storage error: the run could not be saved"

// persist writes the run's one row and, when it changed, the session row, in
// one call (one transaction where the driver can). It runs with a context
// that is not cancelled, so a cancelled run is still recorded.
func (st *state) persist() {
	st.saved = true
	d := st.a.conf().DB
	if d == nil {
		return
	}
	st.detached = detachedCtx{parent: st.ctx}
	var ctx context.Context = &st.detached
	// A superseded attempt must not overwrite the newer attempt's row. A
	// journal in the run's database checks the attempt inside the save's
	// transaction (one transaction: a takeover cannot land in between);
	// another journal is checked just before, in its own. The journal's
	// fence runs after a durable parent's job fence (a team member's run
	// under its team's job): the job row is locked before the journal's
	// fence row, as every transaction of the queue that takes both does.
	var fenced bool
	if tf, ok := st.opts.journal().(db.TxFencer); ok {
		ctx, fenced = db.WithTxFenceAfter(ctx, tf, d, st.out.RunID, st.attempt())
	}
	if f, ok := st.opts.journal().(run.Fencer); ok && !fenced {
		if err := f.Fence(ctx, st.out.RunID, st.attempt()); err != nil {
			st.persistErr = fmt.Errorf("%w: run %s not saved: %w", ErrStorage, st.out.RunID, err)
			return
		}
	}
	out := st.out
	now := time.Now().Unix()
	out.UpdatedAt = now
	st.applyReferences(out)
	if h := st.a.conf().BeforeStore; h != nil {
		h(ctx, out)
	}
	if !st.sessionRead && !st.opts.newSession {
		if err := st.readSessionLate(ctx, d); err != nil {
			st.persistErr = fmt.Errorf("%w: save run %s: read session %s: %w", ErrStorage, st.out.RunID, st.out.SessionID, err)
			return
		}
	}
	stored, err := st.storedForm(ctx, out)
	if err != nil {
		st.persistErr = err
	}
	row, err := db.RunFromOutput(stored)
	if err == nil {
		var sessErr error
		if row, sessErr, err = st.write(ctx, d, now, out, stored, row); sessErr != nil {
			st.persistErr = fmt.Errorf("%w: save session %s: %w", ErrStorage, out.SessionID, sessErr)
			return
		}
	}
	out = stored
	if err == nil && out.Status.InHistory() && st.a.conf().AddHistoryToContext {
		st.p.history.put(row.SessionID, &db.HistoryRef{RunID: row.RunID, UpdatedAt: row.UpdatedAt, RunData: row.RunData},
			contextMessages(out.Messages))
	}
	if err != nil {
		st.persistErr = fmt.Errorf("%w: save run %s: %w", ErrStorage, out.RunID, err)
		return
	}
	st.followApprovals(ctx, d, out)
}

// write writes the run's row (row, made from stored) and, when it changed,
// the session row (made from out, the run as it ends; sessErr: it could not
// be made, nothing was written). A run that joined its session's line does
// it in a turn of the line, starting from the last row written through it
// when that is newer than its read (sessionlines.go). The session write is
// conditional on the row it starts from (db.Session.Expect): when another
// process wrote the session since, the run reads it again and writes its
// changes over that row (rebase), as over a newer row of its line.
func (st *state) write(ctx context.Context, d *db.DB, now int64, out, stored *run.Output, row *db.Run) (_ *db.Run, sessErr, err error) {
	var wrote *db.Session // the session row this save wrote
	if st.joined {
		k := st.lineKey()
		base := sessionline.Default().Acquire(k, st.lineSeq)
		if base != nil {
			st.rebase(base)
		}
		defer func() { st.lineSeq = sessionline.Default().Release(k, wrote, st.lineSeq, base != nil) }()
	}
	for changed := 0; ; changed++ {
		sess, share, err := st.sessionToSave(ctx, now, out)
		if err != nil {
			return nil, err, nil
		}
		if sess != nil {
			sess.Expect = db.ExpectOf(st.session)
		}
		// sess and row were built for this save: handed over.
		saved, written, err := d.SaveRunOwned(ctx, sess, row)
		if errors.Is(err, db.ErrSessionChanged) && changed < sessionline.MaxChangedRetries {
			fresh, gerr := d.GetSession(ctx, out.SessionID)
			switch {
			case errors.Is(gerr, db.ErrNotFound):
				fresh = nil // deleted since: the run's write creates it again
			case gerr != nil:
				return nil, nil, gerr
			}
			st.rebase(fresh)
			if row, err = db.RunFromOutput(stored); err != nil { // the refused row was handed over
				return nil, nil, err
			}
			continue
		}
		if saved != nil {
			st.session = saved
		}
		if err == nil && sess != nil {
			st.extras().counted = share
			wrote = saved
		}
		return written, nil, err
	}
}

// readSessionLate reads the session row of a run that was cancelled before
// its read completed: its save starts from that row, as from a row an
// overlapping run wrote (rebase), instead of writing a session row of its
// own over the stored one (its state, metrics and name were lost).
func (st *state) readSessionLate(ctx context.Context, d *db.DB) error {
	s, err := d.GetSession(ctx, st.out.SessionID)
	switch {
	case errors.Is(err, db.ErrNotFound):
	case err != nil:
		return err
	default:
		st.rebase(s)
	}
	st.sessionRead = true
	return nil
}

// detachedCtx is context.WithoutCancel(parent) as a pointer the run holds:
// the standard one is a value that is boxed again on every Value call (a
// save looks up the user scope and the write fence several times), one
// allocation each. It is not done and has no error, deadline or cause,
// whatever happens to the run's context.
type detachedCtx struct{ parent context.Context }

func (*detachedCtx) Deadline() (time.Time, bool) { return time.Time{}, false }
func (*detachedCtx) Done() <-chan struct{}       { return nil }
func (*detachedCtx) Err() error                  { return nil }
func (c *detachedCtx) String() string            { return "agent.detachedCtx" }

// Value is the parent's. context.Cause of a detached context is nil, as
// with context.WithoutCancel, because its Err is nil (Cause asks Err first).
func (c *detachedCtx) Value(key any) any { return c.parent.Value(key) }

// sessionShare is what the run adds to its session's metrics: its own
// tokens and its member runs' (see run.RunShare).
func (st *state) sessionShare(ctx context.Context, out *run.Output) run.SessionMetrics {
	members := out.MemberResponses
	if f := st.a.conf().MemberRuns; f != nil {
		members = f(ctx, out)
	}
	return run.RunShare(out.Metrics, members)
}

// sessionToSave returns the session row as this run leaves it, or nil when
// the run must not or need not write it; now is the save's second. The
// session gets what it has not counted yet of share, the run's share of its
// metrics (see sessionShare; nil when the run writes no session).
func (st *state) sessionToSave(ctx context.Context, now int64, out *run.Output) (_ *db.Session, share *run.SessionMetrics, _ error) {
	if st.out.ParentRunID != "" && st.session != nil {
		// A member or step run shares its team's or workflow's session: the
		// session row is theirs to write. A new session is still created
		// (the run row references it) and the parent's write takes it over.
		return nil, nil, nil
	}
	var sh run.SessionMetrics
	if st.out.ParentRunID == "" {
		// A member or step run creating the session counts no tokens in
		// it: its parent counts them (run.RunShare), and the parent's
		// write, refused by this row, adds its whole share to it.
		sh = st.sessionShare(ctx, out)
	}
	share = &sh
	s := db.Session{}
	if st.session != nil {
		s = *st.session
	}
	s.SessionID = st.out.SessionID
	if st.out.UserID != "" {
		s.UserID = st.out.UserID
	}
	s.SetComponent(st.p.comp, st.p.agentData)
	s.Summary = st.sessionSummary(st.session)
	state := st.stateToWrite()
	var counted *run.SessionMetrics
	if x := st.ext; x != nil {
		counted = x.counted
	}
	add := sh // nothing counted yet: all of it, read only from here on
	if counted != nil {
		add = share.Since(counted)
	}
	data, err := st.sessionData(s.SessionData, state, &add)
	if err != nil {
		return nil, nil, err
	}
	s.SessionData = data
	// A run that spent tokens changed the session's metrics: written,
	// without comparing the data it surely changed.
	if old := st.session; old != nil && old.UpdatedAt == now && old.UserID == s.UserID && !add.Counts() &&
		db.SameJSON(old.SessionData, s.SessionData) && st.p.storedComponent.same(old.AgentData, s.AgentData) &&
		st.p.storedComponent.same(old.TeamData, s.TeamData) &&
		db.SameJSON(old.Summary, s.Summary) &&
		old.SessionType == s.SessionType {
		// Nothing would change, not even updated_at (epoch seconds): skip the write.
		return nil, share, nil
	}
	row := s // s stays on the stack when the write is skipped
	return &row, share, nil
}

// jsonMemo remembers one pair of JSON texts sameJSON found equal although
// their bytes differ (db.SameJSON): the agent's (or team's) component data and the form
// the store gives it back in (Postgres's JSONB is normalised). Every turn
// of a conversation compares that same pair; decoding both each time is
// most of the unchanged-session check. Safe for concurrent runs.
type jsonMemo struct{ p atomic.Pointer[[2][]byte] }

// same is db.SameJSON(stored, mine), answered from the memo when it holds
// exactly this pair.
func (m *jsonMemo) same(stored, mine []byte) bool {
	if bytes.Equal(stored, mine) {
		return true
	}
	if e := m.p.Load(); e != nil && bytes.Equal(e[0], stored) && bytes.Equal(e[1], mine) {
		return true
	}
	if !db.SameJSON(stored, mine) {
		return false
	}
	m.p.Store(&[2][]byte{bytes.Clone(stored), bytes.Clone(mine)})
	return true
}

// sessionData returns the session_data object data as the run leaves it:
// with state as its session_state (nil: unchanged) and add added to its
// session_metrics (see run.UpdateSessionData).
func (st *state) sessionData(data json.RawMessage, state map[string]any, add *run.SessionMetrics) (json.RawMessage, error) {
	out, kept, err := run.UpdateSessionData(data, state, add)
	if kept != nil {
		// Stored by someone else in a form we cannot add to: the run and
		// the rest of the session are stored, the metrics left as they are.
		slog.Warn("agent: the session's metrics are not updated", "session_id", st.out.SessionID, "run_id", st.out.RunID, "error", kept)
	}
	return out, err
}
