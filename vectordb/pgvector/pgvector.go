// Package pgvector is the vector store on Postgres with the pgvector
// extension: Agno's vector table layout with user_id, an HNSW index
// (cosine), a GIN full-text index, and the user scope and metadata filters
// in the WHERE clause of the index scan (pgvector 0.8's iterative scan keeps
// reading the index until Limit rows pass them).
//
// The table keeps full-precision vector columns; the HNSW index it creates
// is on their half-precision cast (embedding::halfvec(N)): half the index
// pages per search, which is most of a query's cost once the index outgrows
// shared_buffers, at a recall measured no lower (docs/benchmarks.md), and
// up to 4,000 dimensions instead of 2,000. Hits are scored and ordered by the
// full-precision distance. A table whose HNSW index is already on the
// vector column itself (an earlier Agentry, or Agno's PgVector) is searched
// through that index; it is not rebuilt behind the caller's back.
//
// Open builds a missing index on a table that already has rows with
// CREATE INDEX CONCURRENTLY (writes go on during the build), and rebuilds
// an INVALID one a failed concurrent build left behind. Such a build waits
// for the database's transactions older than it to end, so Open returns
// only once they have.
package pgvector

import (
	"bytes"
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib" // also the "pgx" database/sql driver
	pgv "github.com/pgvector/pgvector-go"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/vectordb"
)

// Config configures the store.
type Config struct {
	// DSN is a Postgres URL; DB, when set, is used instead (not closed by Close).
	DSN string
	DB  *sql.DB
	// Schema (default "ai", as Agno) and Table (default "agno_vectors").
	Schema, Table string
	// Dimensions is the embedding length; an existing table of another
	// length is refused (vectordb.ErrEmbedderMismatch).
	Dimensions int
	// EfSearch is the HNSW search beam (hnsw.ef_search) of a query; a
	// query for k hits uses at least 2k. 0 means DefaultEfSearch; 1..1000.
	EfSearch int
}

// DefaultEfSearch is Config.EfSearch's default: recall@10 >= 0.95 against
// an exact scan on the 100k benchmark (docs/benchmarks.md).
const DefaultEfSearch = 100

// Store is the pgvector store. Safe for concurrent use.
type Store struct {
	db    *sql.DB
	owned bool
	t     string // "schema"."table"
	dims  int
	// half: the HNSW index is on embedding::halfvec(dims), so searches
	// order by that expression to use it.
	half bool
	ef   int
	// forceANN, set by tests only, forces the HNSW path with
	// hnsw.max_scan_tuples = forceANN: a planner misestimate at small scale.
	forceANN int
}

var (
	_ vectordb.Store           = (*Store)(nil)
	_ vectordb.ContentReplacer = (*Store)(nil)
)

// maxDims is the most dimensions pgvector's HNSW index takes (on halfvec).
const maxDims = 4000

var ident = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,62}$`)

// Open connects, creates the extension, schema, table and indexes if
// missing, and refuses a pre-v3 table (no user_id column).
func Open(ctx context.Context, cfg Config) (*Store, error) {
	if cfg.Schema == "" {
		cfg.Schema = "ai"
	}
	if cfg.Table == "" {
		cfg.Table = "agno_vectors"
	}
	if !ident.MatchString(cfg.Schema) || !ident.MatchString(cfg.Table) {
		return nil, errors.New("vectordb/pgvector: schema and table names are letters, digits and _")
	}
	if cfg.Dimensions <= 0 || cfg.Dimensions > maxDims {
		return nil, fmt.Errorf("vectordb/pgvector: Dimensions must be 1..%d (pgvector's HNSW index on halfvec)", maxDims)
	}
	if cfg.EfSearch == 0 {
		cfg.EfSearch = DefaultEfSearch
	}
	if cfg.EfSearch < 1 || cfg.EfSearch > 1000 {
		return nil, errors.New("vectordb/pgvector: EfSearch must be 1..1000")
	}
	s := &Store{db: cfg.DB, t: `"` + cfg.Schema + `"."` + cfg.Table + `"`, dims: cfg.Dimensions, ef: cfg.EfSearch}
	if s.db == nil {
		d, err := sql.Open("pgx", cfg.DSN)
		if err != nil {
			return nil, err
		}
		s.db, s.owned = d, true
	}
	if err := s.schema(ctx, cfg); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// setupLock names the advisory lock every Open holds while it creates the
// extension, schema, table and, on a new or empty table, the indexes:
// CREATE ... IF NOT EXISTS is no guard against another session creating
// the same object at the same moment (two replicas starting together
// failed with "duplicate key value violates unique constraint
// pg_type_typname_nsp_index").
const setupLock = "agentry vectordb/pgvector: schema setup"

// querier is what the setup runs on: the locked transaction, or the pool
// for the concurrent index builds, which no transaction may hold.
type querier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

func (s *Store) schema(ctx context.Context, cfg Config) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`, setupLock); err != nil {
		return fmt.Errorf("vectordb/pgvector: lock the schema setup: %w", err)
	}
	concurrent, err := s.createTable(ctx, tx, cfg)
	if err != nil {
		return err
	}
	if !concurrent {
		if err := s.indexes(ctx, tx, cfg, false); err != nil {
			return err
		}
		return tx.Commit()
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	return s.indexes(ctx, s.db, cfg, true)
}

// createTable creates the extension, schema and table if missing, checks
// an existing table, and reports whether it has rows (its indexes are then
// built concurrently).
func (s *Store) createTable(ctx context.Context, q querier, cfg Config) (concurrent bool, err error) {
	if _, err := q.ExecContext(ctx, `CREATE EXTENSION IF NOT EXISTS vector`); err != nil {
		return false, fmt.Errorf("vectordb/pgvector: CREATE EXTENSION vector (install pgvector on the server): %w", err)
	}
	var exists bool
	if err := q.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM information_schema.tables WHERE table_schema = $1 AND table_name = $2)`,
		cfg.Schema, cfg.Table).Scan(&exists); err != nil {
		return false, err
	}
	if exists {
		var hasUser bool
		if err := q.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM information_schema.columns WHERE table_schema = $1 AND table_name = $2 AND column_name = 'user_id')`,
			cfg.Schema, cfg.Table).Scan(&hasUser); err != nil {
			return false, err
		}
		if !hasUser {
			return false, fmt.Errorf("%w: table %s predates per-user isolation (no user_id column); run Agno's v2 -> v3 vector migration "+
				"(libs/agno/migrations/v2_to_v3/migrate_sql_vectordbs.py), or: ALTER TABLE %s ADD COLUMN user_id VARCHAR; CREATE INDEX ON %s (user_id)",
				vectordb.ErrMigrationRequired, s.t, s.t, s.t)
		}
		var typmod int
		if err := q.QueryRowContext(ctx, `SELECT atttypmod FROM pg_attribute WHERE attrelid = $1::regclass AND attname = 'embedding'`, s.t).Scan(&typmod); err != nil {
			return false, err
		}
		if typmod != s.dims {
			return false, fmt.Errorf("%w: %s holds %d-dimensional vectors, the embedder gives %d", vectordb.ErrEmbedderMismatch, s.t, typmod, s.dims)
		}
		// On a table that already has rows, an index is built
		// CONCURRENTLY: a plain CREATE INDEX holds a lock that blocks
		// every write to the table for the whole build (minutes for
		// HNSW on a large table). A new or empty table takes the plain
		// build: nothing waits on it, and CONCURRENTLY would wait for
		// every older transaction in the database.
		if err := q.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM `+s.t+`)`).Scan(&concurrent); err != nil {
			return false, err
		}
	}
	stmts := []string{
		`CREATE SCHEMA IF NOT EXISTS "` + cfg.Schema + `"`,
		fmt.Sprintf(`CREATE TABLE IF NOT EXISTS %s (
			id VARCHAR PRIMARY KEY, name VARCHAR, meta_data JSONB NOT NULL DEFAULT '{}'::jsonb, filters JSONB DEFAULT '{}'::jsonb,
			content TEXT NOT NULL, embedding vector(%d) NOT NULL, usage JSONB, created_at TIMESTAMPTZ DEFAULT now(), updated_at TIMESTAMPTZ,
			content_hash VARCHAR, content_id VARCHAR, user_id VARCHAR)`, s.t, s.dims),
	}
	for _, st := range stmts {
		if _, err := q.ExecContext(ctx, st); err != nil {
			return false, fmt.Errorf("vectordb/pgvector: create schema: %w", err)
		}
	}
	return concurrent, nil
}

// indexes creates the missing indexes on q, CONCURRENTLY when concurrent.
func (s *Store) indexes(ctx context.Context, q querier, cfg Config, concurrent bool) error {
	for _, ix := range []struct{ suffix, def string }{
		{"content_id", `(content_id)`},
		{"content_hash", `(content_hash)`},
		{"user_id", `(user_id)`},
		{"fts", `USING gin (to_tsvector('simple', content))`},
	} {
		if err := s.ensureIndex(ctx, q, cfg, ix.suffix, ix.def, concurrent); err != nil {
			return err
		}
	}
	// The valid cosine HNSW index already there decides how searches
	// order (pg_get_indexdef spells the opclass and, for ours, the cast);
	// an invalid one is used by no query.
	var defs []string
	rows, err := q.QueryContext(ctx, `SELECT pg_get_indexdef(i.indexrelid) FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
		JOIN pg_am a ON a.oid = c.relam WHERE i.indrelid = $1::regclass AND a.amname = 'hnsw' AND i.indisvalid`, s.t)
	if err != nil {
		return err
	}
	for rows.Next() {
		var d string
		if err := rows.Scan(&d); err != nil {
			rows.Close()
			return err
		}
		defs = append(defs, d)
	}
	if err := rows.Close(); err != nil {
		return err
	}
	halfDef := fmt.Sprintf("((embedding)::halfvec(%d)) halfvec_cosine_ops", s.dims)
	for _, d := range defs {
		if strings.Contains(d, halfDef) {
			s.half = true
			return nil
		}
	}
	for _, d := range defs {
		if strings.Contains(d, "(embedding vector_cosine_ops)") {
			return nil
		}
	}
	if err := s.ensureIndex(ctx, q, cfg, "embedding", fmt.Sprintf(`USING hnsw ((embedding::halfvec(%d)) halfvec_cosine_ops)`, s.dims), concurrent); err != nil {
		return err
	}
	s.half = true
	return nil
}

// maxIdent is Postgres' identifier length (NAMEDATALEN-1); longer names
// are truncated to it.
const maxIdent = 63

// ensureIndex creates the index idx_<table>_<suffix> ON the table def,
// CONCURRENTLY when concurrent, unless a valid one of that name is there.
// An invalid one (what a failed or cancelled concurrent build leaves: kept
// up by every write, used by no query, and skipped by IF NOT EXISTS) is
// dropped and built again, unless a build of it is still running. A
// concurrent build that fails because another Open's build of the index
// started first is no error.
func (s *Store) ensureIndex(ctx context.Context, q querier, cfg Config, suffix, def string, concurrent bool) error {
	name := "idx_" + cfg.Table + "_" + suffix
	if len(name) > maxIdent { // ASCII: ident allows letters, digits and _
		name = name[:maxIdent]
	}
	qname := `"` + cfg.Schema + `"."` + name + `"`
	state := func() (valid, building bool, err error) {
		err = q.QueryRowContext(ctx, `SELECT i.indisvalid, EXISTS (SELECT 1 FROM pg_stat_progress_create_index p WHERE p.index_relid = i.indexrelid)
			FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_namespace n ON n.oid = c.relnamespace
			WHERE n.nspname = $1 AND c.relname = $2`, cfg.Schema, name).Scan(&valid, &building)
		return valid, building, err
	}
	valid, building, err := state()
	switch {
	case err == nil && (valid || building):
		return nil
	case err == nil:
		drop := `DROP INDEX IF EXISTS `
		if concurrent {
			drop = `DROP INDEX CONCURRENTLY IF EXISTS `
		}
		if _, err := q.ExecContext(ctx, drop+qname); err != nil {
			return fmt.Errorf("vectordb/pgvector: drop invalid index %s (left by a failed concurrent build) to rebuild it: %w", qname, err)
		}
	case !errors.Is(err, sql.ErrNoRows):
		return err
	}
	create := `CREATE INDEX IF NOT EXISTS "`
	if concurrent {
		create = `CREATE INDEX CONCURRENTLY IF NOT EXISTS "`
	}
	if _, err := q.ExecContext(ctx, create+name+`" ON `+s.t+` `+def); err != nil {
		if concurrent {
			if valid, building, serr := state(); serr == nil && (valid || building) {
				return nil
			}
			return fmt.Errorf("vectordb/pgvector: create index %s concurrently (the next Open rebuilds it if this left it invalid): %w", qname, err)
		}
		return fmt.Errorf("vectordb/pgvector: create schema: %w", err)
	}
	return nil
}

// Dimensions is the length of the vectors the store holds: a knowledge
// base refuses an embedder of another length when it is built, not at its
// first insert.
func (s *Store) Dimensions() int { return s.dims }

// Close closes the pool it opened.
func (s *Store) Close() error {
	if s.owned {
		return s.db.Close()
	}
	return nil
}

func nullStr(v string) any {
	if v == "" {
		return nil
	}
	return v
}

// unit is v scaled to length 1, computed in float64. Cosine similarity
// does not change, but every vector then fits the index's halfvec cast
// (a component over 65,504 failed the write or the search: "out of range
// for type halfvec"), and no norm pgvector computes in float32 underflows
// to 0 (a vector of components near 1e-30 scored NaN, which no JSON
// answer can carry). CheckRows and CheckQuery refuse zero and non-finite
// vectors before.
func unit(v []float32) []float32 {
	var s float64
	for _, x := range v {
		s += float64(x) * float64(x)
	}
	inv := 1 / math.Sqrt(s)
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = float32(float64(x) * inv)
	}
	return out
}

// pgText reports whether s can be a Postgres text value: UTF-8 without
// NUL (Postgres refuses either: "invalid byte sequence for encoding UTF8").
func pgText(s string) bool { return utf8.ValidString(s) && !strings.ContainsRune(s, 0) }

// storableText is s as Postgres text, as Agno's PgVector stores content:
// each NUL, and here each invalid byte, becomes U+FFFD.
func storableText(s string) string {
	if pgText(s) {
		return s
	}
	return strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "\uFFFD")
}

// nulJSON reports whether encoded JSON holds a NUL character, which jsonb
// refuses ("unsupported Unicode escape sequence"); an escaped backslash
// before u0000 is refused too (conservative).
func nulJSON(b []byte) bool { return bytes.Contains(b, []byte(`\u0000`)) }

// Upsert writes rows in one transaction; their vectors are stored scaled
// to length 1 (unit), their content and name as storableText.
func (s *Store) Upsert(ctx context.Context, rows []vectordb.Row) error {
	if err := vectordb.CheckRows(rows, s.dims); err != nil {
		return err
	}
	if err := pgRows(ctx, rows); err != nil {
		return err
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := s.upsertTx(ctx, tx, rows); err != nil {
		return err
	}
	return tx.Commit()
}

// pgRows checks that rows, checked as vectordb.CheckRows checks them, and
// the caller's user id are text Postgres can hold.
func pgRows(ctx context.Context, rows []vectordb.Row) error {
	for _, r := range rows {
		if !pgText(r.ID) || !pgText(r.ContentID) || !pgText(r.ContentHash) || !pgText(r.UserID) {
			return fmt.Errorf("%w: row %q: ids, content hash and user id must be UTF-8 text without NUL", vectordb.ErrInvalidQuery, r.ID)
		}
	}
	if u, ok := db.UserScope(ctx); ok && !pgText(u) {
		return fmt.Errorf("%w: user id %q must be UTF-8 text without NUL", vectordb.ErrInvalidQuery, u)
	}
	return nil
}

// ReplaceContent deletes the content's rows the caller may write and
// upserts rows in one transaction, holding a transaction advisory lock on
// the content id: a replace by another process waits, and its delete then
// sees (and removes) these rows, so the last replace's rows alone stay.
func (s *Store) ReplaceContent(ctx context.Context, contentID string, rows []vectordb.Row) error {
	if err := vectordb.CheckContentRows(contentID, rows, s.dims); err != nil {
		return err
	}
	if err := pgRows(ctx, rows); err != nil {
		return err
	}
	if !pgText(contentID) {
		return fmt.Errorf("%w: content id %q must be UTF-8 text without NUL", vectordb.ErrInvalidQuery, contentID)
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`, s.t+" "+contentID); err != nil {
		return err
	}
	if u, ok := db.UserScope(ctx); ok {
		_, err = tx.ExecContext(ctx, `DELETE FROM `+s.t+` WHERE content_id = $1 AND user_id = $2`, contentID, u)
	} else {
		_, err = tx.ExecContext(ctx, `DELETE FROM `+s.t+` WHERE content_id = $1`, contentID)
	}
	if err != nil {
		return err
	}
	if err := s.upsertTx(ctx, tx, rows); err != nil {
		return err
	}
	return tx.Commit()
}

// upsertTx writes checked rows in tx.
func (s *Store) upsertTx(ctx context.Context, tx *sql.Tx, rows []vectordb.Row) error {
	// The rows are locked in the order of their ids, whatever order the
	// caller gave: two upserts of the same rows in different orders each
	// took one row and waited for the other's, and one failed "deadlock
	// detected". Rows of one id keep their order (the last one wins).
	rows = slices.Clone(rows)
	slices.SortStableFunc(rows, func(a, b vectordb.Row) int { return strings.Compare(a.ID, b.ID) })
	scopeUser, scoped := db.UserScope(ctx)
	for _, r := range rows {
		own := r.UserID
		if scoped {
			own = scopeUser
		}
		var cur sql.NullString
		err := tx.QueryRowContext(ctx, `SELECT user_id FROM `+s.t+` WHERE id = $1 FOR UPDATE`, r.ID).Scan(&cur)
		if err == nil && cur.String != own {
			return fmt.Errorf("%w: row %s belongs to another owner", db.ErrNotFound, r.ID)
		}
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		meta := r.Metadata
		if meta == nil {
			meta = map[string]any{}
		}
		mj, err := json.Marshal(meta)
		if err != nil {
			return fmt.Errorf("%w: row %s metadata: %v", vectordb.ErrInvalidQuery, r.ID, err)
		}
		if nulJSON(mj) {
			return fmt.Errorf("%w: row %s metadata holds a NUL character", vectordb.ErrInvalidQuery, r.ID)
		}
		// the owner is checked again on conflict: another owner's insert of
		// the id may have committed after the SELECT above found nothing
		res, err := tx.ExecContext(ctx, `INSERT INTO `+s.t+` AS v (id, name, meta_data, content, embedding, content_hash, content_id, user_id, updated_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, now())
			ON CONFLICT (id) DO UPDATE SET name = EXCLUDED.name, meta_data = EXCLUDED.meta_data, content = EXCLUDED.content,
			embedding = EXCLUDED.embedding, content_hash = EXCLUDED.content_hash, content_id = EXCLUDED.content_id, updated_at = now()
			WHERE v.user_id IS NOT DISTINCT FROM EXCLUDED.user_id`,
			r.ID, storableText(r.Name), string(mj), storableText(r.Content), pgv.NewVector(unit(r.Vector)), r.ContentHash, r.ContentID, nullStr(own))
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			return fmt.Errorf("%w: row %s belongs to another owner", db.ErrNotFound, r.ID)
		}
	}
	return nil
}

// DeleteContent deletes a content's rows the caller may write.
func (s *Store) DeleteContent(ctx context.Context, contentID string) error {
	if !pgText(contentID) {
		return nil // no row has such an id
	}
	if u, ok := db.UserScope(ctx); ok {
		_, err := s.db.ExecContext(ctx, `DELETE FROM `+s.t+` WHERE content_id = $1 AND user_id = $2`, contentID, u)
		return err
	}
	_, err := s.db.ExecContext(ctx, `DELETE FROM `+s.t+` WHERE content_id = $1`, contentID)
	return err
}

// UpdateMetadata rewrites the metadata of a content's rows the caller may
// write: meta, plus the row's own values of the keys in keep that meta does
// not set.
func (s *Store) UpdateMetadata(ctx context.Context, contentID string, meta map[string]any, keep ...string) error {
	if meta == nil {
		meta = map[string]any{}
	}
	mj, err := json.Marshal(meta)
	if err != nil {
		return fmt.Errorf("%w: metadata: %v", vectordb.ErrInvalidQuery, err)
	}
	if nulJSON(mj) {
		return fmt.Errorf("%w: metadata holds a NUL character", vectordb.ErrInvalidQuery)
	}
	if !pgText(contentID) {
		return nil // no row has such an id
	}
	if keep == nil {
		keep = []string{}
	}
	args := []any{contentID, string(mj), keep}
	cond := ""
	if u, ok := db.UserScope(ctx); ok {
		args = append(args, u)
		cond = " AND user_id = $4"
	}
	_, err = s.db.ExecContext(ctx, `UPDATE `+s.t+` SET meta_data = COALESCE((SELECT jsonb_object_agg(key, value) FROM jsonb_each(meta_data) WHERE key = ANY($3::text[])), '{}'::jsonb) || $2::jsonb,
		updated_at = now() WHERE content_id = $1`+cond, args...)
	return err
}

// HasContentHash reports rows with the hash of the caller's owner.
func (s *Store) HasContentHash(ctx context.Context, hash string) (bool, error) {
	if !pgText(hash) {
		return false, nil // no row has such a hash
	}
	var ok bool
	var err error
	if u, scoped := db.UserScope(ctx); scoped {
		err = s.db.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM `+s.t+` WHERE content_hash = $1 AND user_id = $2)`, hash, u).Scan(&ok)
	} else {
		err = s.db.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM `+s.t+` WHERE content_hash = $1 AND user_id IS NULL)`, hash).Scan(&ok)
	}
	return ok, err
}

// where builds the scope and filter conditions, numbering from next.
func where(ctx context.Context, filters map[string]any, args []any) (string, []any, error) {
	var conds []string
	if u, ok := db.UserScope(ctx); ok {
		args = append(args, u)
		conds = append(conds, fmt.Sprintf("(user_id = $%d OR user_id IS NULL)", len(args)))
	}
	if len(filters) > 0 {
		fj, err := json.Marshal(filters)
		if err != nil {
			return "", nil, err
		}
		if nulJSON(fj) {
			return "", nil, fmt.Errorf("%w: a filter value holds a NUL character, which no stored metadata can", vectordb.ErrInvalidQuery)
		}
		args = append(args, string(fj))
		conds = append(conds, fmt.Sprintf("meta_data @> $%d::jsonb", len(args)))
	}
	if len(conds) == 0 {
		return "", args, nil
	}
	return " WHERE " + strings.Join(conds, " AND "), args, nil
}

// Count counts the rows the caller can see.
func (s *Store) Count(ctx context.Context) (int, error) {
	w, args, _ := where(ctx, nil, nil)
	var n int
	err := s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM `+s.t+w, args...).Scan(&n)
	return n, err
}

// Search runs q under the caller's scope.
func (s *Store) Search(ctx context.Context, q vectordb.Query) ([]vectordb.Hit, error) {
	if err := vectordb.CheckQuery(&q, s.dims); err != nil {
		return nil, err
	}
	switch q.Mode {
	case vectordb.Vector:
		return s.vectorSearch(ctx, q, q.Limit)
	case vectordb.Keyword:
		return s.keywordSearch(ctx, q, q.Limit)
	}
	n := max(q.Limit*4, 20)
	v, err := s.vectorSearch(ctx, q, n)
	if err != nil {
		return nil, err
	}
	k, err := s.keywordSearch(ctx, q, n)
	if err != nil {
		return nil, err
	}
	return vectordb.FuseRRF(q.Limit, v, k), nil
}

const cols = `id, COALESCE(name, ''), meta_data, COALESCE(content, ''), COALESCE(content_hash, ''), COALESCE(content_id, ''), COALESCE(user_id, '')`

func scanHits(rows *sql.Rows) ([]vectordb.Hit, error) {
	defer rows.Close()
	return collectHits(rows)
}

// hitRows is what collectHits reads: database/sql's rows or pgx's.
type hitRows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
}

// collectHits scans rows of cols and the score.
func collectHits(rows hitRows) ([]vectordb.Hit, error) {
	out := []vectordb.Hit{}
	for rows.Next() {
		var h vectordb.Hit
		var meta []byte
		if err := rows.Scan(&h.ID, &h.Name, &meta, &h.Content, &h.ContentHash, &h.ContentID, &h.UserID, &h.Score); err != nil {
			return nil, err
		}
		if len(meta) > 2 {
			_ = json.Unmarshal(meta, &h.Metadata)
		}
		out = append(out, h)
	}
	return out, rows.Err()
}

// vectorSearch orders by cosine distance through the HNSW index; the scope
// and filters sit in the same query, and the iterative scan reads on until
// k rows pass them, or until hnsw.max_scan_tuples (20,000 by default) index
// tuples have been read.
//
// Two things keep a caller whose rows are few in a large table from
// getting fewer than k hits although k exist (the cap above, reached
// before the scan meets them): every search is planned for its own user id
// (plan_cache_mode = force_custom_plan: a cached generic plan would take
// the HNSW path for every user, while with the id's statistics Postgres
// reads a small scope exactly through the user_id index), and when the
// index scan still returns fewer than k rows the search is rerun exactly
// (index scans off: the user_id bitmap or a sequential scan, then a sort).
//
// A search is one round trip: BEGIN, the SET LOCALs, the query and COMMIT
// go out as one pgx batch (a pipeline ending in one Sync) on a pinned
// connection; the exact rerun is a second. A connection that cannot end
// the transaction (a cancelled context) is closed rather than returned to
// the pool mid-transaction.
func (s *Store) vectorSearch(ctx context.Context, q vectordb.Query, k int) ([]vectordb.Hit, error) {
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	var out []vectordb.Hit
	err = conn.Raw(func(dc any) error {
		sc, ok := dc.(*stdlib.Conn)
		if !ok {
			return fmt.Errorf("vectordb/pgvector: Config.DB must use the pgx driver, got %T", dc)
		}
		query, args, err := s.vectorSQL(ctx, q, k, false)
		if err != nil {
			return err
		}
		set := []string{`SET LOCAL hnsw.iterative_scan = strict_order`, `SET LOCAL plan_cache_mode = force_custom_plan`,
			fmt.Sprintf(`SET LOCAL hnsw.ef_search = %d`, max(s.ef, min(k*2, 1000)))}
		if s.forceANN > 0 {
			set = append(set, `SET LOCAL enable_seqscan = off`, `SET LOCAL enable_bitmapscan = off`,
				fmt.Sprintf(`SET LOCAL hnsw.max_scan_tuples = %d`, s.forceANN))
		}
		if out, err = readOnly(ctx, sc.Conn(), set, query, args); err != nil || len(out) >= k {
			return err
		}
		query, args, err = s.vectorSQL(ctx, q, k, true)
		if err != nil {
			return err
		}
		out, err = readOnly(ctx, sc.Conn(), []string{`SET LOCAL enable_indexscan = off`}, query, args)
		return err
	})
	if err != nil {
		return nil, err
	}
	// The index orders by half-precision distance; the hits go back in
	// the order of their full-precision scores.
	slices.SortStableFunc(out, func(a, b vectordb.Hit) int { return cmp.Compare(b.Score, a.Score) })
	return out, nil
}

// readOnly runs query after the settings in one read-only transaction,
// sent as one batch.
func readOnly(ctx context.Context, c *pgx.Conn, settings []string, query string, args []any) ([]vectordb.Hit, error) {
	b := &pgx.Batch{}
	b.Queue(`BEGIN READ ONLY`)
	for _, st := range settings {
		b.Queue(st)
	}
	b.Queue(query, args...)
	b.Queue(`COMMIT`)
	br := c.SendBatch(ctx, b)
	_, err := br.Exec()
	for range settings {
		if err != nil {
			break
		}
		if _, err = br.Exec(); err != nil {
			err = fmt.Errorf("vectordb/pgvector: pgvector 0.8 or later is needed: %w", err)
		}
	}
	var out []vectordb.Hit
	if err == nil {
		out, err = scanPgxHits(br)
	}
	if err == nil {
		_, err = br.Exec()
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if c.PgConn().TxStatus() != 'I' {
		if _, rerr := c.Exec(context.WithoutCancel(ctx), `ROLLBACK`); rerr != nil || c.PgConn().TxStatus() != 'I' {
			c.Close(context.WithoutCancel(ctx))
			return nil, errors.Join(err, rerr, sql.ErrConnDone)
		}
	}
	return out, err
}

// vectorSQL is the search's SELECT: ordered by the expression the HNSW
// index is on (exact: by the full-precision distance), scored by the
// full-precision cosine similarity.
func (s *Store) vectorSQL(ctx context.Context, q vectordb.Query, k int, exact bool) (string, []any, error) {
	w, args, err := where(ctx, q.Filters, []any{pgv.NewVector(unit(q.Vector))})
	if err != nil {
		return "", nil, err
	}
	// a row of Agno's table may have no embedding (Agno writes NULL when
	// embedding its chunk failed): no distance, so no vector hit
	if w == "" {
		w = " WHERE embedding IS NOT NULL"
	} else {
		w += " AND embedding IS NOT NULL"
	}
	args = append(args, k)
	order := fmt.Sprintf(`embedding <=> $1::vector(%d)`, s.dims)
	if s.half && !exact {
		order = fmt.Sprintf(`embedding::halfvec(%[1]d) <=> $1::vector(%[1]d)::halfvec(%[1]d)`, s.dims)
	}
	return fmt.Sprintf(`SELECT %s, 1 - (embedding <=> $1::vector(%d)) FROM %s%s ORDER BY %s LIMIT $%d`, cols, s.dims, s.t, w, order, len(args)), args, nil
}

func scanPgxHits(br pgx.BatchResults) ([]vectordb.Hit, error) {
	rows, err := br.Query()
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	return collectHits(rows)
}

// tsQuery ORs the text's words; only letters and digits reach to_tsquery.
func tsQuery(text string) string {
	var words []string
	for _, w := range strings.FieldsFunc(strings.ToLower(text), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsNumber(r) }) {
		words = append(words, w)
		if len(words) == 64 {
			break
		}
	}
	return strings.Join(words, " | ")
}

func (s *Store) keywordSearch(ctx context.Context, q vectordb.Query, k int) ([]vectordb.Hit, error) {
	tq := tsQuery(q.Text)
	if tq == "" {
		return []vectordb.Hit{}, nil
	}
	w, args, err := where(ctx, q.Filters, []any{tq})
	if err != nil {
		return nil, err
	}
	cond := " WHERE to_tsvector('simple', content) @@ to_tsquery('simple', $1)"
	if w != "" {
		cond += " AND " + strings.TrimPrefix(w, " WHERE ")
	}
	args = append(args, k)
	rows, err := s.db.QueryContext(ctx, `SELECT `+cols+`, ts_rank_cd(to_tsvector('simple', content), to_tsquery('simple', $1)) AS r FROM `+s.t+cond+
		fmt.Sprintf(` ORDER BY r DESC, id LIMIT $%d`, len(args)), args...)
	if err != nil {
		return nil, err
	}
	return scanHits(rows)
}
