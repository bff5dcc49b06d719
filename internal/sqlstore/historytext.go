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
	agent, team, user, cached, members bool
	limit                              int
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
	k := historyShape{agent: hq.AgentID != "", team: hq.TeamID != "", user: scoped, cached: len(hq.Cached) > 0, members: hq.MemberRuns, limit: hq.Limit}
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
// the session arm's (session, user), the runs arm's (historyWhere). A cached
// text is one without cached runs or SQLite's, whose run_data expression
// binds nothing (see buildSessionHistoryRefs).
func (s *Store) sessionHistoryRefsArgs(hq db.HistoryQuery, user string, scoped bool) []any {
	args := make([]any, 0, 7+len(historySkipArgs))
	sid := any(hq.SessionID) // converted once: a string in an interface is an allocation
	var u any
	args = append(args, sid)
	if scoped {
		u = user
		args = append(args, u)
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

// matchesCachedInGo reports whether SessionHistoryRefs matches the cached
// runs in Go (SQLite, with cached runs) rather than in its statement: the
// statement's shape and the scan of its rows both follow it.
func (s *Store) matchesCachedInGo(cached []db.CachedRun) bool {
	return len(cached) > 0 && s.d.Name == "sqlite"
}

// buildSessionHistoryRefs assembles SessionHistoryRefs' statement (not yet
// bound for the dialect) and its arguments from the history conditions.
//
// On SQLite with cached runs (matchesCachedInGo) the runs arm is one row:
// every run as an entry of text (sizedRefEntry), newest first, without its
// run_data. The cache is matched in Go (sizedHistory) and the run_data of
// the runs it lacks read by a second statement (fillUncached). Matching in
// the statement (historyRunData's one-text form) cost a string search of
// the cached runs' text and three replace() calls per row, and a row of
// its own per run cost ~20 calls into the driver: together most of a
// whole-history SQLite turn's history read (docs/hotpath.md). Elsewhere a
// second statement is a second round trip, so the cached runs are matched
// in the statement (their run_data NULL) and a run is a row.
func (s *Store) buildSessionHistoryRefs(ctx context.Context, hq db.HistoryQuery) (string, []any) {
	sw, w, open, mid, end := s.sessionHistoryFrame(ctx, hq)
	sws, ws, from := sw.String(), w.String(), s.runsOnSessionIndex()
	var (
		runs     []string
		dataArgs []any
	)
	if s.matchesCachedInGo(hq.Cached) {
		runs = []string{"SELECT 1, group_concat(e, ''), NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL FROM (SELECT ",
			sizedRefEntry, " AS e FROM ", from, ws, " ORDER BY run_index DESC", historyLimit(hq.Limit + 1), ")"}
	} else {
		var data string
		data, dataArgs = s.historyRunData(hq.Cached)
		runs = []string{"SELECT 1, run_id, NULL, NULL, NULL, NULL, NULL, ", data, ", NULL, NULL, NULL, NULL, NULL, run_index, updated_at FROM ",
			from, ws, " ORDER BY run_index DESC", historyLimit(hq.Limit + 1)}
	}
	parts := append(append([]string{open, "SELECT 0, ", sessionCols, " FROM ", s.sessions, sws, mid}, runs...), end)
	n := 0
	for _, p := range parts {
		n += len(p)
	}
	var b strings.Builder
	b.Grow(n)
	for _, p := range parts {
		b.WriteString(p)
	}
	args := make([]any, 0, len(sw.args)+len(dataArgs)+len(w.args))
	args = append(append(append(args, sw.args...), dataArgs...), w.args...)
	return b.String(), args
}
