package agentos

import (
	"testing"

	"github.com/agentryhq/agentry/db"
)

// TestUserMemoryStats_UserIDFilters: GET /user_memory_stats?user_id= lists
// that user's statistics only, as Agno's route does; the parameter was
// ignored for an unscoped caller, who got every user's.
func TestUserMemoryStats_UserIDFilters(t *testing.T) {
	t.Parallel()
	d := openSQLite(t, "mem-db")
	seedMemories(t, d)
	ts, _ := testServer(t, Config{DBs: []*db.DB{d}}, nil)
	all := decode[paginated[map[string]any]](t, get(t, ts.URL+"/user_memory_stats", nil))
	if all.Meta.TotalCount != 2 {
		t.Fatalf("GET /user_memory_stats = %+v, want alice and bob", all)
	}
	one := decode[paginated[map[string]any]](t, get(t, ts.URL+"/user_memory_stats?user_id=alice", nil))
	if one.Meta.TotalCount != 1 || len(one.Data) != 1 || one.Data[0]["user_id"] != "alice" || one.Data[0]["total_memories"] != float64(1) {
		t.Errorf("GET /user_memory_stats?user_id=alice = %+v, want alice's only", one)
	}
	none := decode[paginated[map[string]any]](t, get(t, ts.URL+"/user_memory_stats?user_id=carol", nil))
	if none.Meta.TotalCount != 0 || len(none.Data) != 0 {
		t.Errorf("GET /user_memory_stats?user_id=carol = %+v, want nothing", none)
	}
}
