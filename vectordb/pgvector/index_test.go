package pgvector

import (
	"context"
	"database/sql"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/agentryhq/agentry/vectordb"
)

// testDatabase creates a database of its own for the test and drops it
// afterwards. A concurrent index build waits for every transaction of its
// database older than the build, so in the shared test database it waits
// on whatever other packages' tests have open (minutes, seen); its own
// database makes the wait the test's alone.
func testDatabase(t *testing.T) (*sql.DB, string) {
	t.Helper()
	admin, _ := testSchema(t)
	name := randName()
	if _, err := admin.Exec(`CREATE DATABASE "` + name + `"`); err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(dsn())
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + name
	raw, err := sql.Open("pgx", u.String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		raw.Close()
		admin.Exec(`DROP DATABASE IF EXISTS "` + name + `" WITH (FORCE)`)
	})
	return raw, "ai"
}

// existingTable opens a store on a fresh table of 8 dimensions, writes n
// rows and drops the HNSW index: a table with rows that lacks it (an
// Agno table, or an index dropped by hand).
func existingTable(t *testing.T, raw *sql.DB, schema string, n int) {
	t.Helper()
	s, err := Open(context.Background(), Config{DB: raw, Schema: schema, Dimensions: 8})
	if err != nil {
		t.Fatal(err)
	}
	rows := make([]vectordb.Row, n)
	for i := range rows {
		v := make([]float32, 8)
		v[i%8] = 1
		rows[i] = vectordb.Row{ID: "r" + string(rune('a'+i%26)) + strings.Repeat("x", i/26), ContentID: "c", Content: "row", Vector: v}
	}
	if err := s.Upsert(context.Background(), rows); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if _, err := raw.Exec(`DROP INDEX "` + schema + `".idx_agno_vectors_embedding`); err != nil {
		t.Fatal(err)
	}
}

// indexState is the named index's validity and definition.
func indexState(t *testing.T, raw *sql.DB, schema, name string) (valid bool, def string) {
	t.Helper()
	if err := raw.QueryRow(`SELECT i.indisvalid, pg_get_indexdef(i.indexrelid) FROM pg_index i WHERE i.indexrelid = $1::regclass`,
		`"`+schema+`".`+name).Scan(&valid, &def); err != nil {
		t.Fatal(err)
	}
	return valid, def
}

// Building the HNSW index on a table that has rows must not block writes
// to it. A writer's open transaction holds up the build; a plain CREATE
// INDEX then queues a SHARE lock that every later INSERT waits behind,
// while CREATE INDEX CONCURRENTLY lets them through.
func TestOpen_IndexOnTableWithRowsLetsWritesThrough(t *testing.T) {
	raw, schema := testDatabase(t)
	existingTable(t, raw, schema, 20)
	ctx := context.Background()
	writer, err := raw.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer writer.Close()
	if _, err := writer.ExecContext(ctx, `BEGIN; INSERT INTO "`+schema+`".agno_vectors (id, content, embedding) VALUES ('w1', 'w', '[1,1,0,0,0,0,0,0]')`); err != nil {
		t.Fatal(err)
	}
	opened := make(chan error, 1)
	go func() {
		s, err := Open(ctx, Config{DB: raw, Schema: schema, Dimensions: 8})
		if err == nil {
			s.Close()
		}
		opened <- err
	}()
	// Wait until the build waits on the writer.
	deadline := time.Now().Add(20 * time.Second)
	for {
		var waiting bool
		if err := raw.QueryRow(`SELECT EXISTS (SELECT 1 FROM pg_stat_activity WHERE query LIKE 'CREATE INDEX%' AND wait_event_type = 'Lock')`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting {
			break
		}
		select {
		case err := <-opened:
			t.Fatalf("Open returned (%v) while a writer's transaction was open", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("the index build never waited on the open writer")
		}
		time.Sleep(20 * time.Millisecond)
	}
	other, err := raw.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	_, insErr := other.ExecContext(ctx, `SET lock_timeout = '2s'; INSERT INTO "`+schema+`".agno_vectors (id, content, embedding) VALUES ('w2', 'w', '[0,1,1,0,0,0,0,0]'); RESET lock_timeout`)
	if _, err := writer.ExecContext(ctx, `COMMIT`); err != nil {
		t.Fatal(err)
	}
	if err := <-opened; err != nil {
		t.Fatal(err)
	}
	if insErr != nil {
		t.Fatalf("an INSERT during the index build: %v", insErr)
	}
	if valid, def := indexState(t, raw, schema, "idx_agno_vectors_embedding"); !valid || !strings.Contains(def, "halfvec_cosine_ops") {
		t.Fatalf("index valid %v: %s", valid, def)
	}
}

// A failed concurrent build leaves an INVALID index, which IF NOT EXISTS
// would keep forever (no query uses it); Open drops and rebuilds it.
func TestOpen_RebuildsInvalidIndex(t *testing.T) {
	for _, tc := range []struct {
		name string
		// invalidate leaves an invalid idx_agno_vectors_<suffix>.
		suffix, invalidate string
	}{
		// A real failed build: a unique index over duplicate values.
		{"failed concurrent build", "embedding", `CREATE UNIQUE INDEX CONCURRENTLY idx_agno_vectors_embedding ON agno_vectors (content)`},
		// The state a cancelled HNSW build leaves, set directly.
		{"invalid hnsw index", "embedding", `CREATE INDEX idx_agno_vectors_embedding ON agno_vectors USING hnsw ((embedding::halfvec(8)) halfvec_cosine_ops);
			UPDATE pg_index SET indisvalid = false WHERE indexrelid = 'idx_agno_vectors_embedding'::regclass`},
		{"invalid user_id index", "user_id", `DROP INDEX idx_agno_vectors_user_id; CREATE INDEX idx_agno_vectors_user_id ON agno_vectors (user_id);
			UPDATE pg_index SET indisvalid = false WHERE indexrelid = 'idx_agno_vectors_user_id'::regclass`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			raw, schema := testDatabase(t)
			existingTable(t, raw, schema, 20)
			conn, err := raw.Conn(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if _, err := conn.ExecContext(context.Background(), `SET search_path = "`+schema+`", public`); err != nil {
				t.Fatal(err)
			}
			for _, st := range strings.Split(tc.invalidate, ";") {
				_, err := conn.ExecContext(context.Background(), st)
				if err != nil && !strings.Contains(tc.invalidate, "UNIQUE") {
					t.Fatal(err)
				}
			}
			conn.ExecContext(context.Background(), `RESET search_path`)
			conn.Close()
			name := "idx_agno_vectors_" + tc.suffix
			if valid, _ := indexState(t, raw, schema, name); valid {
				t.Fatal("setup left a valid index")
			}
			s, err := Open(context.Background(), Config{DB: raw, Schema: schema, Dimensions: 8})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			valid, def := indexState(t, raw, schema, name)
			if !valid {
				t.Fatalf("%s still invalid after Open: %s", name, def)
			}
			if tc.suffix == "embedding" {
				if !s.half || !strings.Contains(def, "USING hnsw") || !strings.Contains(def, "halfvec_cosine_ops") {
					t.Fatalf("half %v, index %s", s.half, def)
				}
				planUses(t, raw, s, name)
			}
		})
	}
}
