package sqlstore

import (
	"context"
	"strings"
	"sync"

	"github.com/agentryhq/agentry/db"
)

// maxHistoryTexts bounds historyTexts: a shape is a few flags and the
// history limit, a small per-agent number, so a store sees a handful.
const maxHistoryTexts = 64

// historyShape is what a SessionHistoryRefs statement's text depends on:
// which optional conditions it has, whether cached runs are left out and
// the limit written into it. The arguments vary, the text does not.
type historyShape struct {
	agent, team, user, cached bool
	limit                     int
}

// historyTexts caches SessionHistoryRefs' statement text per shape, bound
// for the dialect. The text was assembled on every turn (the two conditions,
// their texts, a builder and the dialect's rebinding: ~10 allocations a
// turn; docs/benchmarks.md, "Issue 12: SQLite conversation, second round
// (i12-sql4)"). Postgres and MariaDB name each cached run in the text, so
// their texts with cached runs are not cached.
type historyTexts struct {
	mu sync.Mutex
	m  map[historyShape]string
}

func (t *historyTexts) get(k historyShape) (string, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	q, ok := t.m[k]
	return q, ok
}

func (t *historyTexts) put(k historyShape, q string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.m) >= maxHistoryTexts {
		return
	}
	if t.m == nil {
		t.m = make(map[historyShape]string)
	}
	t.m[k] = q
}

// sessionHistoryRefsQuery is SessionHistoryRefs' statement, bound for the
// dialect, and its arguments. A cached text gets its arguments from
// sessionHistoryRefsArgs, in the order sessionHistoryFrame's conditions
// bind them (TestSessionHistoryRefsArgs_MatchBuiltStatement).
func (s *Store) sessionHistoryRefsQuery(ctx context.Context, hq db.HistoryQuery) (string, []any) {
	user, scoped := db.UserScope(ctx)
	k := historyShape{agent: hq.AgentID != "", team: hq.TeamID != "", user: scoped, cached: len(hq.Cached) > 0, limit: hq.Limit}
	cacheable := !k.cached || s.d.Name == "sqlite"
	if cacheable {
		if q, ok := s.historyTexts.get(k); ok {
			return q, s.sessionHistoryRefsArgs(hq, user, scoped)
		}
	}
	q, args := s.buildSessionHistoryRefs(ctx, hq)
	q = s.d.Bind(q)
	if cacheable {
		s.historyTexts.put(k, q)
	}
	return q, args
}

// sessionHistoryRefsArgs are the arguments of SessionHistoryRefs' statement:
// the session arm's (session, user), the run_data expression's (cached runs
// on SQLite), the runs arm's (historyWhere).
func (s *Store) sessionHistoryRefsArgs(hq db.HistoryQuery, user string, scoped bool) []any {
	args := make([]any, 0, 7+len(historySkipArgs))
	sid := any(hq.SessionID) // converted once: a string in an interface is an allocation
	var u any
	args = append(args, sid)
	if scoped {
		u = user
		args = append(args, u)
	}
	if len(hq.Cached) > 0 {
		args = append(args, cachedRunsKey(hq.Cached))
	}
	args = append(args, sid)
	args = append(args, historySkipArgs...)
	if hq.AgentID != "" {
		args = append(args, hq.AgentID)
	}
	if hq.TeamID != "" {
		args = append(args, hq.TeamID)
	}
	if scoped {
		args = append(args, u)
	}
	return args
}

// buildSessionHistoryRefs assembles SessionHistoryRefs' statement (not yet
// bound for the dialect) and its arguments from the history conditions.
func (s *Store) buildSessionHistoryRefs(ctx context.Context, hq db.HistoryQuery) (string, []any) {
	sw, w, open, mid, end := s.sessionHistoryFrame(ctx, hq)
	data, dataArgs := s.historyRunData(hq.Cached)
	sws, ws, from := sw.String(), w.String(), s.runsOnSessionIndex()
	var b strings.Builder
	b.Grow(len(sessionCols) + len(data) + len(s.sessions) + len(from) + len(sws) + len(ws) + 160)
	for _, part := range []string{open, "SELECT 0, ", sessionCols, " FROM ", s.sessions, sws, mid,
		"SELECT 1, run_id, NULL, NULL, NULL, NULL, NULL, ", data, ", NULL, NULL, NULL, NULL, NULL, run_index, updated_at FROM ",
		from, ws, " ORDER BY run_index DESC", historyLimit(hq.Limit + 1), end} {
		b.WriteString(part)
	}
	args := make([]any, 0, len(sw.args)+len(dataArgs)+len(w.args))
	args = append(append(append(args, sw.args...), dataArgs...), w.args...)
	return b.String(), args
}
