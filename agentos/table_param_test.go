package agentos

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/run"
)

// Agno's data routes take a table query parameter (get_db): it needs db_id
// and must name one of that database's tables. It was ignored, so a client
// naming a table the database does not have read the default tables as if
// they were the ones it asked for.
func TestDataRoutes_TableParameterAsAgno(t *testing.T) {
	t.Parallel()
	one, two := openSQLite(t, "db-one"), openSQLite(t, "db-two")
	if _, err := two.UpsertSession(context.Background(), &db.Session{SessionID: "s2", SessionType: run.TypeAgent, AgentID: "echo"}); err != nil {
		t.Fatal(err)
	}
	ts, _ := testServer(t, Config{DBs: []*db.DB{one, two}}, nil)
	for _, c := range []struct {
		query  string
		status int
		body   string
	}{
		{"/sessions?table=agno_sessions", http.StatusBadRequest, "db_id query parameter is required when passing a table"},
		{"/sessions?db_id=db-two&table=other_sessions", http.StatusNotFound, "No database with id 'db-two' has table 'other_sessions'"},
		{"/sessions?db_id=db-nope&table=agno_sessions", http.StatusNotFound, "db-nope"},
		{"/sessions?db_id=db-two&table=agno_sessions", http.StatusOK, `"s2"`},
		{"/memories?db_id=db-two&table=agno_memories", http.StatusOK, `"data"`},
		{"/memories?db_id=db-two&table=agno_sessionz", http.StatusNotFound, "has table 'agno_sessionz'"},
		{"/sessions?db_id=db-two", http.StatusOK, `"s2"`},
	} {
		res := do(t, http.MethodGet, ts.URL+c.query, nil, nil)
		if res.status != c.status || !strings.Contains(string(res.body), c.body) {
			t.Errorf("GET %s = %d %s, want %d with %q", c.query, res.status, res.body, c.status, c.body)
		}
	}
}
