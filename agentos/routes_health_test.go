package agentos

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/sqlite"
)

// TestReady_ChecksEveryDatabase: /health/ready is 200 while every database
// answers and 503 {"detail"} once one does not; /health stays 200.
func TestReady_ChecksEveryDatabase(t *testing.T) {
	t.Parallel()
	open := func(id string) *db.DB {
		d, err := sqlite.Open(context.Background(), sqlite.Config{Path: filepath.Join(t.TempDir(), id+".db"), ID: id})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { d.Close() })
		return d
	}
	first, second := open("first"), open("second")
	ts, logs := testServer(t, Config{DBs: []*db.DB{first, second}}, nil)
	if res := get(t, ts.URL+ReadyPath, nil); res.status != 200 || res.body != "{\"status\":\"ready\"}\n" {
		t.Fatalf("both databases up: %d %s", res.status, res.body)
	}
	second.Close() // a closed pool cannot be reached: a real failure of the second database
	res := get(t, ts.URL+ReadyPath, nil)
	if res.status != 503 || res.detail(t) != "not ready: "+detailDBUnavailable {
		t.Fatalf("second database closed: %d %s", res.status, res.body)
	}
	if !contains(logs.String(), `"db_id":"second"`) {
		t.Errorf("the log does not name the failing database:\n%s", logs.String())
	}
	if res := get(t, ts.URL+"/health", nil); res.status != 200 {
		t.Errorf("/health = %d, want 200 whatever the database does", res.status)
	}

	noDB, _ := testServer(t, Config{}, nil)
	if res := get(t, noDB.URL+ReadyPath, nil); res.status != 200 {
		t.Errorf("no database: %d %s", res.status, res.body)
	}
}
