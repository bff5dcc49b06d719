package pgvector

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/vectordb"
	"github.com/agentryhq/agentry/vectordb/vectordbtest"
)

func dsn() string {
	if d := os.Getenv("AGENTRY_TEST_POSTGRES_DSN"); d != "" {
		return d
	}
	return "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"
}

func randName() string {
	b := make([]byte, 6)
	rand.Read(b)
	return "agentry_test_" + hex.EncodeToString(b)
}

// testSchema creates a schema for the test and drops it afterwards.
func testSchema(t *testing.T) (*sql.DB, string) {
	t.Helper()
	raw, err := sql.Open("pgx", dsn())
	if err != nil {
		t.Fatal(err)
	}
	if err := raw.Ping(); err != nil {
		t.Fatalf("postgres at %s: %v (start it: see .ci/run)", dsn(), err)
	}
	schema := randName()
	t.Cleanup(func() {
		raw.Exec(`DROP SCHEMA IF EXISTS "` + schema + `" CASCADE`)
		raw.Close()
	})
	return raw, schema
}

func TestConformance(t *testing.T) {
	raw, schema := testSchema(t)
	vectordbtest.Run(t, func(t *testing.T) vectordb.Store {
		s, err := Open(context.Background(), Config{DB: raw, Schema: schema, Table: "v_" + strings.TrimPrefix(randName(), "agentry_test_"), Dimensions: vectordbtest.Dims})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	})
}

func TestOpen_RefusesPreV3TableNamingTheMigration(t *testing.T) {
	raw, schema := testSchema(t)
	if _, err := raw.Exec(`CREATE EXTENSION IF NOT EXISTS vector; CREATE SCHEMA "` + schema + `"; CREATE TABLE "` + schema + `".agno_vectors (
		id VARCHAR PRIMARY KEY, name VARCHAR, meta_data JSONB, filters JSONB, content TEXT, embedding vector(8), usage JSONB,
		created_at TIMESTAMPTZ, updated_at TIMESTAMPTZ, content_hash VARCHAR, content_id VARCHAR)`); err != nil {
		t.Fatal(err)
	}
	_, err := Open(context.Background(), Config{DB: raw, Schema: schema, Dimensions: 8})
	if !errors.Is(err, vectordb.ErrMigrationRequired) || !strings.Contains(err.Error(), "migrate_sql_vectordbs") {
		t.Fatalf("err %v", err)
	}
}

func TestOpen_RefusesOtherDimensions(t *testing.T) {
	raw, schema := testSchema(t)
	s, err := Open(context.Background(), Config{DB: raw, Schema: schema, Dimensions: 8})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if _, err := Open(context.Background(), Config{DB: raw, Schema: schema, Dimensions: 16}); !errors.Is(err, vectordb.ErrEmbedderMismatch) {
		t.Fatalf("err %v", err)
	}
}

// A query that fails inside the one-round-trip batch ends its transaction,
// so the pooled connection is neither handed back inside it nor discarded
// (and reopened) by the pool's session reset.
func TestSearch_FailedQueryLeavesConnectionOutsideTransaction(t *testing.T) {
	raw, schema := testSchema(t)
	raw.SetMaxOpenConns(1)
	s, err := Open(context.Background(), Config{DB: raw, Schema: schema, Dimensions: 8})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// The table becomes a view whose content fails at run time (after
	// BEGIN has run), not when the statement is prepared.
	if err := s.Upsert(context.Background(), []vectordb.Row{{ID: "boom", ContentID: "c", Content: "x", Vector: []float32{1, 0, 0, 0, 0, 0, 0, 0}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Exec(`SET search_path = "` + schema + `"; ALTER TABLE agno_vectors RENAME TO t;
		CREATE VIEW agno_vectors AS SELECT id, name, meta_data, (1 / (length(id) - 4))::text AS content, content_hash, content_id, user_id, embedding FROM t;
		RESET search_path`); err != nil {
		t.Fatal(err)
	}
	var pid, pidAfter int
	if err := raw.QueryRow(`SELECT pg_backend_pid()`).Scan(&pid); err != nil {
		t.Fatal(err)
	}
	q := vectordb.Query{Mode: vectordb.Vector, Vector: []float32{1, 0, 0, 0, 0, 0, 0, 0}, Limit: 3}
	if _, err := s.Search(context.Background(), q); err == nil || !strings.Contains(err.Error(), "division by zero") {
		t.Fatalf("search on a broken table: err %v", err)
	}
	var ro string
	if err := raw.QueryRow(`SHOW transaction_read_only`).Scan(&ro); err != nil || ro != "off" {
		t.Fatalf("pooled connection after the failed search: transaction_read_only %q, err %v", ro, err)
	}
	if err := raw.QueryRow(`SELECT pg_backend_pid()`).Scan(&pidAfter); err != nil || pidAfter != pid {
		t.Fatalf("backend %d before the failed search, %d after (err %v): the connection was dropped", pid, pidAfter, err)
	}
}
