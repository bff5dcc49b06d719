package embedded

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/url"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	_ "modernc.org/sqlite" // the pure-Go SQLite driver

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/vectordb"
)

// Config configures the store.
type Config struct {
	// Path is the SQLite file holding the rows; the graphs are saved to
	// Path + ".hnsw". Required.
	Path string
	// Table names the rows table; default "agno_vectors".
	Table string
	// Dimensions and EmbedderID must match what the store was created
	// with (ErrEmbedderMismatch otherwise).
	Dimensions int
	EmbedderID string
	// M, EfConstruction and EfSearch tune the graphs; zero means the defaults.
	M, EfConstruction, EfSearch int
	// ExactBelow: a filtered search whose matching rows number fewer than
	// this scores them exactly instead of walking the graphs; default 50000.
	ExactBelow int
	Logger     *slog.Logger
}

// Store is the embedded vector store. Safe for concurrent use.
type Store struct {
	cfg   Config
	sqldb *sql.DB
	t     string // quoted table
	fts   string // quoted FTS table

	mu    sync.RWMutex // guards parts, where and dirty; writes also hold it across their transaction
	parts map[string]*index
	where map[int64]loc
	gen   int64
	dirty bool
	// storeID is the database's id (table _meta): the graph file of
	// another database is not loaded.
	storeID string
	wmu     sync.Mutex // serialises writers

	afterRank func() // tests: runs between ranking rowids and loading them
}

type loc struct {
	owner string
	node  int32
}

var (
	_ vectordb.Store           = (*Store)(nil)
	_ vectordb.ContentReplacer = (*Store)(nil)
)

// Open opens or creates the store at cfg.Path.
func Open(ctx context.Context, cfg Config) (*Store, error) {
	if cfg.Path == "" {
		return nil, errors.New("vectordb/embedded: Path is required")
	}
	if cfg.Dimensions <= 0 || cfg.EmbedderID == "" {
		return nil, errors.New("vectordb/embedded: Dimensions and EmbedderID are required")
	}
	if cfg.Table == "" {
		cfg.Table = "agno_vectors"
	}
	if !tableName.MatchString(cfg.Table) {
		return nil, fmt.Errorf("vectordb/embedded: table name %q: use letters, digits and _", cfg.Table)
	}
	if cfg.Dimensions > maxDims {
		return nil, fmt.Errorf("vectordb/embedded: Dimensions %d: at most %d", cfg.Dimensions, maxDims)
	}
	if cfg.M <= 0 {
		cfg.M = DefaultM
	}
	if cfg.M > maxM {
		return nil, fmt.Errorf("vectordb/embedded: M %d: at most %d (default %d)", cfg.M, maxM, DefaultM)
	}
	if cfg.EfConstruction <= 0 {
		cfg.EfConstruction = DefaultEfConstruction
	}
	if cfg.EfSearch <= 0 {
		cfg.EfSearch = DefaultEfSearch
	}
	if cfg.ExactBelow <= 0 {
		cfg.ExactBelow = 50_000
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	q := url.Values{}
	q.Add("_pragma", "busy_timeout(10000)")
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous(NORMAL)")
	// Writes begin IMMEDIATE: a deferred transaction reads first and then
	// cannot take the write lock if another process (agentry knowledge
	// insert beside agentry serve) wrote in between; SQLite fails it at
	// once with SQLITE_BUSY, without waiting out the busy timeout.
	q.Set("_txlock", "immediate")
	sqldb, err := sql.Open("sqlite", "file:"+uriPath(cfg.Path)+"?"+q.Encode())
	if err != nil {
		return nil, err
	}
	sqldb.SetMaxOpenConns(4)
	s := &Store{cfg: cfg, sqldb: sqldb, t: `"` + cfg.Table + `"`, fts: `"` + cfg.Table + `_fts"`}
	if err := s.schema(ctx); err != nil {
		sqldb.Close()
		return nil, err
	}
	if err := s.loadGraphs(ctx); err != nil {
		sqldb.Close()
		return nil, err
	}
	return s, nil
}

// uriPath is path as the path of a file: URI: SQLite's URI parser reads
// '?' as the start of the query, '#' as a fragment and "%XX" as an escape,
// so unescaped they open another file ("a?b.db" opened "a"); a leading
// "//" would start an authority.
func uriPath(path string) string {
	if strings.HasPrefix(path, "//") {
		path = filepath.Clean(path)
	}
	return strings.NewReplacer("%", "%25", "?", "%3F", "#", "%23").Replace(path)
}

func (s *Store) schema(ctx context.Context) error {
	var n int
	if err := s.sqldb.QueryRowContext(ctx, `SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = ?`, s.cfg.Table).Scan(&n); err != nil {
		return fmt.Errorf("vectordb/embedded: open %s: %w", s.cfg.Path, err)
	}
	if n > 0 {
		var hasUser int
		if err := s.sqldb.QueryRowContext(ctx, `SELECT COUNT(*) FROM pragma_table_info(?) WHERE name = 'user_id'`, s.cfg.Table).Scan(&hasUser); err != nil {
			return err
		}
		if hasUser == 0 {
			return fmt.Errorf("%w: table %s in %s predates per-user isolation (no user_id column); run Agno's v2 -> v3 vector migration "+
				"(libs/agno/migrations/v2_to_v3/migrate_sql_vectordbs.py), or add the column: ALTER TABLE %s ADD COLUMN user_id TEXT",
				vectordb.ErrMigrationRequired, s.cfg.Table, s.cfg.Path, s.cfg.Table)
		}
	}
	stmts := []string{
		`CREATE TABLE IF NOT EXISTS ` + s.t + ` (
			id TEXT PRIMARY KEY NOT NULL, name TEXT, meta_data TEXT NOT NULL DEFAULT '{}', filters TEXT DEFAULT '{}',
			content TEXT NOT NULL, embedding BLOB NOT NULL, usage TEXT, created_at BIGINT, updated_at BIGINT,
			content_hash TEXT, content_id TEXT, user_id TEXT)`,
		`CREATE INDEX IF NOT EXISTS "idx_` + s.cfg.Table + `_content_id" ON ` + s.t + ` (content_id)`,
		`CREATE INDEX IF NOT EXISTS "idx_` + s.cfg.Table + `_content_hash" ON ` + s.t + ` (content_hash)`,
		`CREATE INDEX IF NOT EXISTS "idx_` + s.cfg.Table + `_user_id" ON ` + s.t + ` (user_id)`,
		`CREATE VIRTUAL TABLE IF NOT EXISTS ` + s.fts + ` USING fts5(content, tokenize = 'unicode61')`,
		`CREATE TABLE IF NOT EXISTS "` + s.cfg.Table + `_meta" (key TEXT PRIMARY KEY NOT NULL, value TEXT NOT NULL)`,
	}
	for _, st := range stmts {
		if _, err := s.sqldb.ExecContext(ctx, st); err != nil {
			return fmt.Errorf("vectordb/embedded: create schema: %w", err)
		}
	}
	want := map[string]string{"embedder": s.cfg.EmbedderID, "dimensions": strconv.Itoa(s.cfg.Dimensions)}
	for k, v := range want {
		if _, err := s.sqldb.ExecContext(ctx, `INSERT OR IGNORE INTO "`+s.cfg.Table+`_meta" (key, value) VALUES (?, ?)`, k, v); err != nil {
			return err
		}
		var got string
		if err := s.sqldb.QueryRowContext(ctx, `SELECT value FROM "`+s.cfg.Table+`_meta" WHERE key = ?`, k).Scan(&got); err != nil {
			return err
		}
		if got != v {
			return fmt.Errorf("%w: %s was built with %s %s, not %s; use that embedder or a new store file", vectordb.ErrEmbedderMismatch, s.cfg.Path, k, got, v)
		}
	}
	if _, err := s.sqldb.ExecContext(ctx, `INSERT OR IGNORE INTO "`+s.cfg.Table+`_meta" (key, value) VALUES ('generation', '0')`); err != nil {
		return err
	}
	// The store id tells this database's graph file from one another
	// database of the same path left behind (a deleted and recreated
	// store counts its generations from 0 again).
	id := make([]byte, 16)
	if _, err := rand.Read(id); err != nil {
		return err
	}
	if _, err := s.sqldb.ExecContext(ctx, `INSERT OR IGNORE INTO "`+s.cfg.Table+`_meta" (key, value) VALUES ('store_id', ?)`, hex.EncodeToString(id)); err != nil {
		return err
	}
	return s.sqldb.QueryRowContext(ctx, `SELECT value FROM "`+s.cfg.Table+`_meta" WHERE key = 'store_id'`).Scan(&s.storeID)
}

func (s *Store) readGen(ctx context.Context, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}) (int64, error) {
	var v string
	if err := q.QueryRowContext(ctx, `SELECT value FROM "`+s.cfg.Table+`_meta" WHERE key = 'generation'`).Scan(&v); err != nil {
		return 0, err
	}
	return strconv.ParseInt(v, 10, 64)
}

func (s *Store) newIndex(owner string) *index {
	return newIndex(s.cfg.Dimensions, s.cfg.M, s.cfg.EfConstruction, uint64(len(owner))*7919+uint64(len(s.parts))+1)
}

func encodeVec(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

func decodeVec(b []byte, dims int) ([]float32, error) {
	if len(b) != 4*dims {
		return nil, fmt.Errorf("vectordb/embedded: stored embedding has %d bytes, want %d", len(b), 4*dims)
	}
	v := make([]float32, dims)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v, nil
}

// loadGraphs reads the saved graphs when they match the rows' generation,
// or rebuilds them from the rows.
func (s *Store) loadGraphs(ctx context.Context) error {
	gen, err := s.readGen(ctx, s.sqldb)
	if err != nil {
		return err
	}
	s.gen = gen
	if parts, ok := s.readGraphFile(gen); ok {
		s.parts = parts
		s.where = map[int64]loc{}
		for owner, x := range parts {
			for i, k := range x.keys {
				if !x.deleted[i] {
					s.where[k] = loc{owner, int32(i)}
				}
			}
		}
		return nil
	}
	return s.rebuild(ctx)
}

// rebuild builds every graph from the rows.
func (s *Store) rebuild(ctx context.Context) error {
	start := time.Now()
	s.parts, s.where = map[string]*index{}, map[int64]loc{}
	rows, err := s.sqldb.QueryContext(ctx, `SELECT rowid, embedding, COALESCE(user_id, '') FROM `+s.t+` ORDER BY rowid`)
	if err != nil {
		return err
	}
	defer rows.Close()
	n := 0
	batches := map[string]*batch{}
	for rows.Next() {
		var rid int64
		var emb []byte
		var owner string
		if err := rows.Scan(&rid, &emb, &owner); err != nil {
			return err
		}
		v, err := decodeVec(emb, s.cfg.Dimensions)
		if err != nil {
			return err
		}
		batches[owner] = batches[owner].add(rid, v)
		n++
	}
	if err := rows.Err(); err != nil {
		return err
	}
	s.addBatches(batches)
	if n > 0 {
		s.cfg.Logger.Info("vectordb/embedded: rebuilt the HNSW graphs from the rows", "rows", n, "took", time.Since(start).Round(time.Millisecond))
		s.dirty = true
	}
	return nil
}

// batch is rows to add to one owner's graph.
type batch struct {
	rids []int64
	vecs [][]float32
}

func (b *batch) add(rid int64, unit []float32) *batch {
	if b == nil {
		b = &batch{}
	}
	b.rids = append(b.rids, rid)
	b.vecs = append(b.vecs, unit)
	return b
}

// addBatches adds rows to their owners' graphs, each batch inserted
// concurrently (index.addBatch). The caller holds mu.
func (s *Store) addBatches(bs map[string]*batch) {
	for owner, b := range bs {
		x := s.parts[owner]
		if x == nil {
			x = s.newIndex(owner)
			s.parts[owner] = x
		}
		for i, id := range x.addBatch(b.rids, b.vecs, 0) {
			s.where[b.rids[i]] = loc{owner, id}
		}
	}
}

func (s *Store) removeLocked(rid int64) {
	l, ok := s.where[rid]
	if !ok {
		return
	}
	delete(s.where, rid)
	x := s.parts[l.owner]
	x.remove(l.node)
	if x.live == 0 {
		delete(s.parts, l.owner)
	}
}

// compact rebuilds partitions that are mostly tombstones.
func (s *Store) compactLocked() {
	for owner, x := range s.parts {
		dead := len(x.keys) - x.live
		if dead < 1000 || dead*4 < len(x.keys) {
			continue
		}
		var b *batch
		for i, k := range x.keys {
			if !x.deleted[i] {
				b = b.add(k, x.vec(int32(i)))
			}
		}
		if b == nil {
			continue
		}
		delete(s.parts, owner)
		s.addBatches(map[string]*batch{owner: b})
	}
}

// owner is the user a write is made as: the scope's user, or the row's own
// for an unscoped (admin) caller.
func owner(ctx context.Context, rowUser string) string {
	if u, ok := db.UserScope(ctx); ok {
		return u
	}
	return rowUser
}

// ownerCond limits a write to the caller's rows.
func ownerCond(ctx context.Context) (string, []any) {
	if u, ok := db.UserScope(ctx); ok {
		return " AND user_id = ?", []any{u}
	}
	return "", nil
}

// visibleCond limits a read to the caller's rows and shared ones.
func visibleCond(ctx context.Context, alias string) (string, []any) {
	if u, ok := db.UserScope(ctx); ok {
		return " AND (" + alias + "user_id = ? OR " + alias + "user_id IS NULL)", []any{u}
	}
	return "", nil
}

// Upsert writes rows in one transaction. A row whose id exists is replaced
// when the caller may write it; another owner's row with the same id is an
// error (ids are meant to carry the owner).
func (s *Store) Upsert(ctx context.Context, rows []vectordb.Row) error {
	if err := vectordb.CheckRows(rows, s.cfg.Dimensions); err != nil {
		return err
	}
	return s.write(ctx, func(tx *sql.Tx) (*change, error) { return s.upsertTx(ctx, tx, rows) })
}

// ReplaceContent deletes the content's rows the caller may write and
// upserts rows in one transaction: the file's write lock (_txlock
// immediate) keeps another process's replace of the content from
// deleting between the two, so the last replace's rows alone stay.
func (s *Store) ReplaceContent(ctx context.Context, contentID string, rows []vectordb.Row) error {
	if err := vectordb.CheckContentRows(contentID, rows, s.cfg.Dimensions); err != nil {
		return err
	}
	return s.write(ctx, func(tx *sql.Tx) (*change, error) {
		gone, err := s.deleteTx(ctx, tx, contentID)
		if err != nil {
			return nil, err
		}
		c, err := s.upsertTx(ctx, tx, rows)
		if err != nil {
			return nil, err
		}
		c.dels = append(gone, c.dels...)
		return c, nil
	})
}

// change is what a write transaction did to the rows the graphs hold:
// rows deleted, and rows added (a row replaced within the batch is dead:
// it never reaches a graph).
type change struct {
	dels []int64
	adds []added
}

type added struct {
	rid  int64
	own  string
	unit []float32
	dead bool
}

// write runs fn in a write transaction, bumps the generation and, once
// committed, applies fn's change to the graphs; a change of nothing is
// no write.
func (s *Store) write(ctx context.Context, fn func(*sql.Tx) (*change, error)) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	tx, err := s.sqldb.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	c, err := fn(tx)
	if err != nil {
		return err
	}
	if c == nil || len(c.dels) == 0 && len(c.adds) == 0 {
		return nil
	}
	if err := s.bumpGen(ctx, tx); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, d := range c.dels {
		s.removeLocked(d)
	}
	batches := map[string]*batch{}
	for _, a := range c.adds {
		if !a.dead {
			batches[a.own] = batches[a.own].add(a.rid, a.unit)
		}
	}
	s.addBatches(batches)
	s.gen++
	s.dirty = true
	s.compactLocked()
	return nil
}

// upsertTx writes checked rows in tx.
func (s *Store) upsertTx(ctx context.Context, tx *sql.Tx, rows []vectordb.Row) (*change, error) {
	now := time.Now().Unix()
	var c change
	addedAt := map[int64]int{}
	for _, r := range rows {
		own := owner(ctx, r.UserID)
		var oldRid int64
		var oldUser sql.NullString
		err := tx.QueryRowContext(ctx, `SELECT rowid, user_id FROM `+s.t+` WHERE id = ?`, r.ID).Scan(&oldRid, &oldUser)
		switch {
		case errors.Is(err, sql.ErrNoRows):
		case err != nil:
			return nil, err
		case oldUser.String != own:
			return nil, fmt.Errorf("%w: row %s belongs to another owner", db.ErrNotFound, r.ID)
		default:
			if _, err := tx.ExecContext(ctx, `DELETE FROM `+s.t+` WHERE rowid = ?`, oldRid); err != nil {
				return nil, err
			}
			if _, err := tx.ExecContext(ctx, `DELETE FROM `+s.fts+` WHERE rowid = ?`, oldRid); err != nil {
				return nil, err
			}
			if i, ok := addedAt[oldRid]; ok {
				c.adds[i].dead = true
				delete(addedAt, oldRid)
			} else {
				c.dels = append(c.dels, oldRid)
			}
		}
		meta, err := json.Marshal(orEmpty(r.Metadata))
		if err != nil {
			return nil, fmt.Errorf("%w: row %s metadata: %v", vectordb.ErrInvalidQuery, r.ID, err)
		}
		unit := normalize(r.Vector)
		res, err := tx.ExecContext(ctx, `INSERT INTO `+s.t+` (id, name, meta_data, filters, content, embedding, usage, created_at, updated_at, content_hash, content_id, user_id)
			VALUES (?, ?, ?, '{}', ?, ?, NULL, ?, ?, ?, ?, ?)`,
			r.ID, r.Name, string(meta), r.Content, encodeVec(unit), now, now, r.ContentHash, r.ContentID, nullStr(own))
		if err != nil {
			return nil, err
		}
		rid, err := res.LastInsertId()
		if err != nil {
			return nil, err
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO `+s.fts+` (rowid, content) VALUES (?, ?)`, rid, r.Content); err != nil {
			return nil, err
		}
		addedAt[rid] = len(c.adds)
		c.adds = append(c.adds, added{rid: rid, own: own, unit: unit})
	}
	return &c, nil
}

func (s *Store) bumpGen(ctx context.Context, tx *sql.Tx) error {
	_, err := tx.ExecContext(ctx, `UPDATE "`+s.cfg.Table+`_meta" SET value = CAST(CAST(value AS INTEGER) + 1 AS TEXT) WHERE key = 'generation'`)
	return err
}

func orEmpty(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	return m
}

func nullStr(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// DeleteContent deletes a content's rows the caller may write.
func (s *Store) DeleteContent(ctx context.Context, contentID string) error {
	return s.write(ctx, func(tx *sql.Tx) (*change, error) {
		rids, err := s.deleteTx(ctx, tx, contentID)
		return &change{dels: rids}, err
	})
}

// deleteTx deletes a content's rows the caller may write in tx and returns
// their rowids.
func (s *Store) deleteTx(ctx context.Context, tx *sql.Tx, contentID string) ([]int64, error) {
	cond, args := ownerCond(ctx)
	rows, err := tx.QueryContext(ctx, `SELECT rowid FROM `+s.t+` WHERE content_id = ?`+cond, append([]any{contentID}, args...)...)
	if err != nil {
		return nil, err
	}
	var rids []int64
	for rows.Next() {
		var rid int64
		if err := rows.Scan(&rid); err != nil {
			rows.Close()
			return nil, err
		}
		rids = append(rids, rid)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	for _, rid := range rids {
		if _, err := tx.ExecContext(ctx, `DELETE FROM `+s.t+` WHERE rowid = ?`, rid); err != nil {
			return nil, err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM `+s.fts+` WHERE rowid = ?`, rid); err != nil {
			return nil, err
		}
	}
	return rids, nil
}

// UpdateMetadata rewrites the metadata of a content's rows the caller may
// write: meta, plus the row's own values of the keys in keep that meta does
// not set. The graphs hold no metadata, so they are not touched.
func (s *Store) UpdateMetadata(ctx context.Context, contentID string, meta map[string]any, keep ...string) error {
	if _, err := json.Marshal(orEmpty(meta)); err != nil {
		return fmt.Errorf("%w: metadata: %v", vectordb.ErrInvalidQuery, err)
	}
	cond, args := ownerCond(ctx)
	s.wmu.Lock()
	defer s.wmu.Unlock()
	tx, err := s.sqldb.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	rows, err := tx.QueryContext(ctx, `SELECT rowid, meta_data FROM `+s.t+` WHERE content_id = ?`+cond, append([]any{contentID}, args...)...)
	if err != nil {
		return err
	}
	type change struct {
		rid  int64
		meta string
	}
	var changes []change
	for rows.Next() {
		var rid int64
		var old string
		if err := rows.Scan(&rid, &old); err != nil {
			rows.Close()
			return err
		}
		var cur map[string]any
		_ = json.Unmarshal([]byte(old), &cur) // a damaged value keeps nothing
		next := make(map[string]any, len(meta)+len(keep))
		for _, k := range keep {
			if v, ok := cur[k]; ok {
				next[k] = v
			}
		}
		for k, v := range meta {
			next[k] = v
		}
		b, _ := json.Marshal(next) // checked above; cur's values came from JSON
		changes = append(changes, change{rid, string(b)})
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	now := time.Now().Unix()
	for _, c := range changes {
		if _, err := tx.ExecContext(ctx, `UPDATE `+s.t+` SET meta_data = ?, updated_at = ? WHERE rowid = ?`, c.meta, now, c.rid); err != nil {
			return err
		}
	}
	return tx.Commit()
}

// HasContentHash reports rows with the hash owned by the caller (scoped: the
// user; unscoped: shared).
func (s *Store) HasContentHash(ctx context.Context, hash string) (bool, error) {
	var n int
	var err error
	if u, ok := db.UserScope(ctx); ok {
		err = s.sqldb.QueryRowContext(ctx, `SELECT COUNT(*) FROM `+s.t+` WHERE content_hash = ? AND user_id = ?`, hash, u).Scan(&n)
	} else {
		err = s.sqldb.QueryRowContext(ctx, `SELECT COUNT(*) FROM `+s.t+` WHERE content_hash = ? AND user_id IS NULL`, hash).Scan(&n)
	}
	return n > 0, err
}

// Dimensions is the length of the vectors the store holds.
func (s *Store) Dimensions() int { return s.cfg.Dimensions }

// Count counts the rows the caller can see.
func (s *Store) Count(ctx context.Context) (int, error) {
	cond, args := visibleCond(ctx, "")
	var n int
	err := s.sqldb.QueryRowContext(ctx, `SELECT COUNT(*) FROM `+s.t+` WHERE 1 = 1`+cond, args...).Scan(&n)
	return n, err
}

// Flush saves the graphs if they changed since the last save.
func (s *Store) Flush() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.dirty {
		return nil
	}
	if err := s.writeGraphFile(); err != nil {
		return err
	}
	s.dirty = false
	return nil
}

// Close saves the graphs and closes the database.
func (s *Store) Close() error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	s.mu.Lock()
	var err error
	if s.dirty {
		err = s.writeGraphFile()
		s.dirty = false
	}
	s.mu.Unlock()
	return errors.Join(err, s.sqldb.Close())
}

// Search runs q under the caller's scope.
func (s *Store) Search(ctx context.Context, q vectordb.Query) ([]vectordb.Hit, error) {
	if err := vectordb.CheckQuery(&q, s.cfg.Dimensions); err != nil {
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
	if q.Text == "" {
		return cut(v, q.Limit), nil
	}
	k, err := s.keywordSearch(ctx, q, n)
	if err != nil {
		return nil, err
	}
	return vectordb.FuseRRF(q.Limit, v, k), nil
}

func cut(h []vectordb.Hit, n int) []vectordb.Hit {
	if len(h) > n {
		return h[:n]
	}
	return h
}

type scored struct {
	rid int64
	sim float64
}

func (s *Store) vectorSearch(ctx context.Context, q vectordb.Query, k int) ([]vectordb.Hit, error) {
	if err := s.syncGraphs(ctx); err != nil {
		return nil, err
	}
	unit := normalize(q.Vector)
	var top []scored
	if len(q.Filters) > 0 {
		var err error
		if top, err = s.filteredScan(ctx, q, unit, k); err != nil {
			return nil, err
		}
	} else {
		top, _, _ = s.walk(ctx, unit, k)
		if len(top) > k {
			top = top[:k]
		}
	}
	return s.fetch(ctx, q, top)
}

// syncGraphs rebuilds the graphs when another process changed the rows
// (agentry knowledge insert beside a running agentry serve): every write
// bumps the generation in the file, and this store's graphs are of the
// generation it last wrote or loaded. The check is one read of the meta
// table; the rebuild happens once per outside change.
func (s *Store) syncGraphs(ctx context.Context) error {
	gen, err := s.readGen(ctx, s.sqldb)
	if err != nil {
		return err
	}
	s.mu.RLock()
	same := gen == s.gen
	s.mu.RUnlock()
	if same {
		return nil
	}
	// Under wmu no write of this store is between its commit (the file's
	// generation bumped) and its graph update (s.gen bumped), so a
	// difference then is another process's doing.
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if gen, err = s.readGen(ctx, s.sqldb); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if gen == s.gen {
		return nil
	}
	s.cfg.Logger.Info("vectordb/embedded: another process changed the rows; rebuilding the graphs", "path", s.cfg.Path)
	if err := s.rebuild(ctx); err != nil {
		return err
	}
	s.gen, s.dirty = gen, true
	return nil
}

// walk searches each graph the caller sees (its own and the shared one;
// every graph for an admin) for its k nearest rows and merges them, best
// first. all reports that every graph gave all its live rows; live is the
// most live rows a graph searched holds. A graph can give fewer than k
// while it holds more: rows its links do not reach from the entry point.
func (s *Store) walk(ctx context.Context, unit []float32, k int) (top []scored, all bool, live int) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var owners []string
	if u, ok := db.UserScope(ctx); ok {
		owners = []string{u, ""}
		if u == "" { // a run without a user: the shared graph, once
			owners = owners[:1]
		}
	} else {
		for o := range s.parts {
			owners = append(owners, o)
		}
	}
	all = true
	for _, o := range owners {
		x := s.parts[o]
		if x == nil {
			continue
		}
		res := x.search(unit, k, s.cfg.EfSearch)
		if len(res) < x.live {
			all = false
		}
		live = max(live, x.live)
		for _, c := range res {
			top = append(top, scored{x.keys[c.id], 1 - float64(c.d)})
		}
	}
	sort.Slice(top, func(i, j int) bool { return top[i].sim > top[j].sim })
	return top, all, live
}

// filteredScan scores the rows that match the filters exactly when they are
// few (ExactBelow), else walks the graphs deeper and keeps the matching ones.
func (s *Store) filteredScan(ctx context.Context, q vectordb.Query, unit []float32, k int) ([]scored, error) {
	top, many, err := s.exactScan(ctx, q, unit, k, s.cfg.ExactBelow)
	if many {
		return s.filteredWalk(ctx, q, unit, k)
	}
	return top, err
}

// exactScan scores every row the filters match, best k first; with limit >
// 0 it stops at limit rows and reports many instead.
func (s *Store) exactScan(ctx context.Context, q vectordb.Query, unit []float32, k, limit int) (top []scored, many bool, err error) {
	cond, args := visibleCond(ctx, "")
	fc, fargs := filterCond(q.Filters, "")
	query, args := `SELECT rowid, embedding FROM `+s.t+` WHERE 1 = 1`+cond+fc, append(args, fargs...)
	if limit > 0 {
		query, args = query+` LIMIT ?`, append(args, limit+1)
	}
	rows, err := s.sqldb.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, false, err
	}
	defer rows.Close()
	for rows.Next() {
		if limit > 0 && len(top) == limit {
			return nil, true, nil
		}
		var rid int64
		var emb []byte
		if err := rows.Scan(&rid, &emb); err != nil {
			return nil, false, err
		}
		v, err := decodeVec(emb, s.cfg.Dimensions)
		if err != nil {
			return nil, false, err
		}
		top = append(top, scored{rid, float64(dot(unit, v))})
	}
	if err := rows.Err(); err != nil {
		return nil, false, err
	}
	sort.Slice(top, func(i, j int) bool { return top[i].sim > top[j].sim })
	if len(top) > k {
		top = top[:k]
	}
	return top, false, nil
}

// filteredWalk answers a filtered search that matches too many rows to score
// them all: it walks the graphs for ever more neighbours, four times as many
// each round, and keeps the ones the filters match, until k match or the
// graphs have no more. When a walk for as many rows as a graph holds still
// missed some (its links do not reach them), the matching rows are scored
// exactly instead.
func (s *Store) filteredWalk(ctx context.Context, q vectordb.Query, unit []float32, k int) ([]scored, error) {
	cond, args := visibleCond(ctx, "")
	fc, fargs := filterCond(q.Filters, "")
	for want := max(4*k, 256); ; want *= 4 {
		cands, all, live := s.walk(ctx, unit, want)
		rids := make([]int64, len(cands))
		for i, c := range cands {
			rids[i] = c.rid
		}
		list, _ := json.Marshal(rids)
		rows, err := s.sqldb.QueryContext(ctx, `SELECT rowid FROM `+s.t+` WHERE rowid IN (SELECT value FROM json_each(?))`+cond+fc,
			append(append([]any{string(list)}, args...), fargs...)...)
		if err != nil {
			return nil, err
		}
		match := map[int64]bool{}
		for rows.Next() {
			var rid int64
			if err := rows.Scan(&rid); err != nil {
				rows.Close()
				return nil, err
			}
			match[rid] = true
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
		var top []scored
		for _, c := range cands {
			if match[c.rid] {
				top = append(top, c)
				if len(top) == k {
					return top, nil
				}
			}
		}
		if all {
			return top, nil
		}
		if want >= live {
			top, _, err := s.exactScan(ctx, q, unit, k, 0)
			return top, err
		}
	}
}

// filterCond turns metadata filters into SQL on meta_data: " AND " and
// one condition per filter, joined as a balanced tree. A chain of ANDs is
// as deep as it is long, and SQLite refuses an expression deeper than
// 1,000 ("Expression tree is too large") - a few hundred filters. Each
// filter binds its value only (its JSON path is a literal: CheckQuery
// allows letters, digits, _ . - in a key), so thousands fit SQLite's
// bound-value limit.
func filterCond(f map[string]any, alias string) (string, []any) {
	if len(f) == 0 {
		return "", nil
	}
	keys := make([]string, 0, len(f))
	for k := range f {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	conds := make([]string, 0, len(keys))
	var args []any
	col := alias + "meta_data"
	for _, k := range keys {
		path := `'$."` + strings.ReplaceAll(strings.ReplaceAll(k, `"`, ``), `'`, ``) + `"'`
		// json_extract gives true as 1 and false as 0: the type is
		// compared too, so a number never matches a boolean.
		switch v := f[k].(type) {
		case bool:
			conds = append(conds, "json_type("+col+", "+path+") = '"+strconv.FormatBool(v)+"'")
		case string:
			conds = append(conds, "json_type("+col+", "+path+") = 'text' AND json_extract("+col+", "+path+") = ?")
			args = append(args, v)
		default:
			conds = append(conds, "json_type("+col+", "+path+") IN ('integer', 'real') AND json_extract("+col+", "+path+") = ?")
			args = append(args, v)
		}
	}
	return " AND " + balancedAnd(conds), args
}

// balancedAnd joins conds with AND, nested so that the expression is as
// deep as the logarithm of their number; their order (and so their bound
// values') is kept.
func balancedAnd(conds []string) string {
	if len(conds) == 1 {
		return "(" + conds[0] + ")"
	}
	mid := len(conds) / 2
	return "(" + balancedAnd(conds[:mid]) + " AND " + balancedAnd(conds[mid:]) + ")"
}

// ftsQuery turns free text into an FTS5 query: its words OR-ed, each quoted
// so no text is read as FTS5 syntax.
func ftsQuery(text string) string {
	var parts []string
	for _, w := range strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !(r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r > 127)
	}) {
		parts = append(parts, `"`+strings.ReplaceAll(w, `"`, `""`)+`"`)
		if len(parts) == 64 {
			break
		}
	}
	return strings.Join(parts, " OR ")
}

func (s *Store) keywordSearch(ctx context.Context, q vectordb.Query, k int) ([]vectordb.Hit, error) {
	m := ftsQuery(q.Text)
	if m == "" {
		return nil, nil
	}
	cond, args := visibleCond(ctx, "v.")
	fc, fargs := filterCond(q.Filters, "v.")
	rows, err := s.sqldb.QueryContext(ctx, `SELECT v.rowid, bm25(`+s.fts+`) FROM `+s.fts+` JOIN `+s.t+` v ON v.rowid = `+s.fts+`.rowid
		WHERE `+s.fts+` MATCH ?`+cond+fc+` ORDER BY bm25(`+s.fts+`) LIMIT ?`, append(append(append([]any{m}, args...), fargs...), k)...)
	if err != nil {
		return nil, err
	}
	var top []scored
	for rows.Next() {
		var sc scored
		if err := rows.Scan(&sc.rid, &sc.sim); err != nil {
			rows.Close()
			return nil, err
		}
		sc.sim = -sc.sim // bm25: lower is better
		top = append(top, sc)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return s.fetch(ctx, q, top)
}

// fetch loads the rows of ranked row ids, in rank order; rows deleted since
// are skipped. The load checks the scope and the filters again: SQLite
// gives a deleted last row's rowid to the next insert, which may be
// another user's row.
func (s *Store) fetch(ctx context.Context, q vectordb.Query, top []scored) ([]vectordb.Hit, error) {
	if len(top) == 0 {
		return []vectordb.Hit{}, nil
	}
	if s.afterRank != nil {
		s.afterRank()
	}
	args := make([]any, len(top))
	for i, t := range top {
		args[i] = t.rid
	}
	cond, cargs := visibleCond(ctx, "")
	fc, fargs := filterCond(q.Filters, "")
	rows, err := s.sqldb.QueryContext(ctx, `SELECT rowid, id, COALESCE(name, ''), meta_data, content, COALESCE(content_hash, ''), COALESCE(content_id, ''), COALESCE(user_id, '')
		FROM `+s.t+` WHERE rowid IN (`+strings.TrimSuffix(strings.Repeat("?,", len(top)), ",")+`)`+cond+fc, append(append(args, cargs...), fargs...)...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	byRid := map[int64]vectordb.Row{}
	for rows.Next() {
		var rid int64
		var r vectordb.Row
		var meta string
		if err := rows.Scan(&rid, &r.ID, &r.Name, &meta, &r.Content, &r.ContentHash, &r.ContentID, &r.UserID); err != nil {
			return nil, err
		}
		if meta != "" && meta != "{}" {
			_ = json.Unmarshal([]byte(meta), &r.Metadata)
		}
		byRid[rid] = r
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	out := make([]vectordb.Hit, 0, len(top))
	for _, t := range top {
		if r, ok := byRid[t.rid]; ok {
			out = append(out, vectordb.Hit{Row: r, Score: t.sim})
		}
	}
	return out, nil
}
