package sqlstore

import (
	"strconv"
	"testing"

	"github.com/agentryhq/agentry/db"
)

// The cache's version rules, with the change counter as an input: an entry
// survives a group's commit only when the counter was the entries' version
// under the write lock and rose by exactly the group's own commit.
func TestHistoryCache_VersionRules(t *testing.T) {
	var counter uint64
	readable := true
	c := newHistoryCache(func() (uint64, bool) { return counter, readable })
	hq := db.HistoryQuery{SessionID: "s", Limit: 3, ReadOnlySession: true}
	sess := &db.Session{SessionID: "s"}
	idx := func(n int64) *int64 { return &n }
	own := func(id string, i int64) *groupEffects {
		return &groupEffects{list: []runEffect{{run: &db.Run{RunID: id, SessionID: "s", RunIndex: idx(i), UpdatedAt: 1}}}}
	}
	has := func(want int) {
		t.Helper()
		_, refs, ok := c.lookup(hq, "", false)
		switch {
		case want < 0 && ok:
			t.Fatalf("hit with %d runs, want a miss", len(refs))
		case want >= 0 && !ok:
			t.Fatal("miss, want a hit")
		case want >= 0 && len(refs) != want:
			t.Fatalf("%d runs, want %d", len(refs), want)
		}
	}
	counter = 5
	c.store(5, hq, "", false, sess, []cachedRef{{id: "r0", idx: 0, upd: 1}})
	hq.Cached = []db.CachedRun{{RunID: "r2", UpdatedAt: 1}, {RunID: "r1", UpdatedAt: 1}, {RunID: "r0", UpdatedAt: 1}}
	has(1)

	// The group's own commit: applied.
	counter = 6
	c.committed(5, true, own("r1", 1), nil)
	has(2)

	// Another commit between the lock and the group's (or after it): +2.
	counter = 8
	c.committed(6, true, own("r2", 2), nil)
	has(-1)

	// A store at a version the database has moved past is not kept.
	c.store(7, hq, "", false, sess, []cachedRef{{id: "r0", idx: 0, upd: 1}})
	has(-1)
	c.store(8, hq, "", false, sess, []cachedRef{{id: "r0", idx: 0, upd: 1}})
	has(1)

	// A commit the cache did not see (any other write): every entry goes.
	counter = 9
	has(-1)
	c.committed(9, true, own("r1", 1), nil) // before is not the entries' version
	counter = 10
	has(-1)

	// A write of unknown effect, a failed commit, an unreadable counter.
	c.store(10, hq, "", false, sess, []cachedRef{{id: "r0", idx: 0, upd: 1}})
	has(1)
	counter = 11
	c.committed(10, true, &groupEffects{unknown: true}, nil)
	has(-1)
	c.store(11, hq, "", false, sess, []cachedRef{{id: "r0", idx: 0, upd: 1}})
	c.committed(11, true, nil, nil)
	has(-1)
	c.store(11, hq, "", false, sess, []cachedRef{{id: "r0", idx: 0, upd: 1}})
	has(1)
	readable = false
	has(-1)
	counter = 12
	c.committed(11, true, own("r1", 1), nil)
	readable = true
	has(-1)

	// Not a read-only caller: neither served nor stored.
	c.store(12, hq, "", false, sess, []cachedRef{{id: "r0", idx: 0, upd: 1}})
	hq.ReadOnlySession = false
	if _, _, ok := c.lookup(hq, "", false); ok {
		t.Fatal("served a caller that may change the session")
	}
}

// The cache holds at most maxHistoryEntries answers; the next one starts it
// again empty.
func TestHistoryCache_Bounded(t *testing.T) {
	c := newHistoryCache(func() (uint64, bool) { return 1, true })
	sess := &db.Session{}
	for i := range maxHistoryEntries + 1 {
		hq := db.HistoryQuery{SessionID: "s" + strconv.Itoa(i), Limit: 3, ReadOnlySession: true}
		c.store(1, hq, "", false, sess, nil)
		if want := i%maxHistoryEntries + 1; c.n != want {
			t.Fatalf("after %d answers the cache holds %d, want %d", i+1, c.n, want)
		}
	}
	if _, _, ok := c.lookup(db.HistoryQuery{SessionID: "s0", Limit: 3, ReadOnlySession: true}, "", false); ok {
		t.Fatal("the first answer is still served after the cache was full")
	}
	last := db.HistoryQuery{SessionID: "s" + strconv.Itoa(maxHistoryEntries), Limit: 3, ReadOnlySession: true}
	if _, _, ok := c.lookup(last, "", false); !ok {
		t.Fatal("the newest answer is not served")
	}
}
