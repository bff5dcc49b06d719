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
