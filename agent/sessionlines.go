package agent

import (
	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/internal/sessionline"
)

// A run joins its session's line (internal/sessionline) before it reads the
// session, writes the row in a turn of the line, from the last row written
// through it when that is newer than its read (rebase), and leaves the line
// when it ends. A member or step run does not join: the session row is its
// team's or workflow's to write.

// lineKey is the run's session line.
func (st *state) lineKey() sessionline.Key {
	return sessionline.Key{DB: st.a.conf().DB, ID: st.out.SessionID}
}

// joinLine joins the run's session line before the run reads its session;
// claimed is whether the durable queue's claim read the session already.
// It reports whether the run is to take that row: not when a run of the
// session wrote it here since the claim's mark (db.WithClaimedSessionAt),
// then the run reads the session itself. A claimed row without a mark may
// be older than any row written through the line (sessionline.UnknownSeq).
func (st *state) joinLine(claimed bool) (takeClaimed bool) {
	r, k := sessionline.Default(), st.lineKey()
	seq := r.Join(k)
	if claimed {
		switch mark := db.ClaimedSessionMark(st.ctx, st.out.RunID); {
		case mark == 0:
			seq = sessionline.UnknownSeq
		case r.WrittenSince(k, mark):
			claimed = false
		}
	}
	st.lineSeq, st.joined = seq, true
	return claimed
}

// leaveLine leaves the run's session line, if it joined one.
func (st *state) leaveLine() {
	if st.joined {
		sessionline.Default().Leave(st.lineKey())
		st.joined = false
	}
}

// storedState is the session state a run derives from the session row s
// (nil: none stored yet) before the call's WithSessionState: the stored
// state, or Config.SessionState when there is no row.
func (st *state) storedState(s *db.Session) map[string]any {
	base := st.a.conf().SessionState
	if s != nil && len(s.SessionData) > 0 {
		if m, ok := db.SessionStateOfStored(s.SessionData); ok {
			base = m
		}
	}
	return base
}

// rebase makes base, a session row written after this run read its
// session, the row this run's next write starts from.
func (st *state) rebase(base *db.Session) {
	x := st.extras()
	if !x.rebased {
		x.rebased, x.readSession = true, st.session
	}
	st.session = base
}

// stateToWrite is the session_state the run writes: its own state, or,
// after a rebase, the newer row's state with the run's changes over it
// (sessionline.MergeState).
func (st *state) stateToWrite() map[string]any {
	x := st.ext
	if x == nil {
		return nil
	}
	if !x.rebased || x.sessionState == nil {
		return x.sessionState
	}
	return sessionline.MergeState(st.storedState(x.readSession), x.sessionState, st.opts.get().sessionState, st.storedState(st.session))
}
