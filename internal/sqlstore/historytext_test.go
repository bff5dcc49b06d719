package sqlstore

import (
	"context"
	"fmt"
	"reflect"
	"testing"

	"github.com/agentryhq/agentry/db"
)

// TestSessionHistoryRefsArgs_MatchBuiltStatement checks that a cached
// statement text gets the arguments the statement was built with, in the
// same order, for every shape, and that the cached text is the built one.
func TestSessionHistoryRefsArgs_MatchBuiltStatement(t *testing.T) {
	t.Parallel()
	cached := []db.CachedRun{{RunID: "r/1", UpdatedAt: 7, Size: 42}, {RunID: "r2", UpdatedAt: 8, Size: 9}}
	for _, d := range []*Dialect{{Name: "sqlite"}, {Name: "postgres", Rebind: RebindDollar}} {
		s := &Store{d: d, sessions: "sessions", runs: "runs", runsOnIndex: "runs"}
		s.historyConds = s.buildHistoryConds()
		for _, agent := range []string{"", "a1"} {
			for _, team := range []string{"", "t1"} {
				for _, user := range []string{"", "u1"} {
					for _, c := range [][]db.CachedRun{nil, cached} {
						name := fmt.Sprintf("%s/agent=%q/team=%q/user=%q/cached=%d", d.Name, agent, team, user, len(c))
						ctx := context.Background()
						if user != "" {
							ctx = db.WithUserScope(ctx, user)
						}
						hq := db.HistoryQuery{SessionID: "s1", AgentID: agent, TeamID: team, Limit: 3, Cached: c}
						wantQ, wantArgs := s.buildSessionHistoryRefs(ctx, hq)
						wantQ = d.Bind(wantQ)
						for i := range 2 { // the first call builds, the second reads the cache
							q, args := s.sessionHistoryRefsQuery(ctx, hq)
							if q != wantQ {
								t.Fatalf("%s call %d: text\n%s\nwant\n%s", name, i, q, wantQ)
							}
							if !reflect.DeepEqual(args, wantArgs) {
								t.Fatalf("%s call %d: args %v, want %v", name, i, args, wantArgs)
							}
						}
					}
				}
			}
		}
	}
}

// TestSessionHistoryRefsQuery_CachesOnlyFixedTexts checks that texts which
// name cached runs one by one (Postgres, MariaDB) are not cached, and that
// the cache stays bounded.
func TestSessionHistoryRefsQuery_CachesOnlyFixedTexts(t *testing.T) {
	t.Parallel()
	s := &Store{d: &Dialect{Name: "postgres", Rebind: RebindDollar}, sessions: "sessions", runs: "runs", runsOnIndex: "runs"}
	s.historyConds = s.buildHistoryConds()
	ctx := context.Background()
	s.sessionHistoryRefsQuery(ctx, db.HistoryQuery{SessionID: "s", Limit: 3, Cached: []db.CachedRun{{RunID: "r", UpdatedAt: 1, Size: 2}}})
	if n := len(s.historyTexts.m); n != 0 {
		t.Fatalf("%d texts cached for a statement naming its cached runs, want 0", n)
	}
	for limit := range 2 * maxHistoryTexts {
		s.sessionHistoryRefsQuery(ctx, db.HistoryQuery{SessionID: "s", Limit: limit})
	}
	if n := len(s.historyTexts.m); n != maxHistoryTexts {
		t.Fatalf("%d texts cached, want the bound %d", n, maxHistoryTexts)
	}
}
