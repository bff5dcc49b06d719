package vectordb

import (
	"context"
	"errors"
	"fmt"
	"math"
	"regexp"
	"sort"
)

// Sentinel errors.
var (
	// ErrMigrationRequired: the table predates per-user isolation (Agno 2.x
	// layout without user_id). The message names the migration.
	ErrMigrationRequired = errors.New("vectordb: migration required")
	// ErrEmbedderMismatch: the store was built with another embedder or
	// vector length than the one given now.
	ErrEmbedderMismatch = errors.New("vectordb: the store holds vectors of another embedder")
	// ErrInvalidQuery: a query or row is malformed (wrong vector length, bad
	// filter key, limit out of range).
	ErrInvalidQuery = errors.New("vectordb: invalid query")
)

// Row is one chunk as stored. UserID empty is a shared row. A user-scoped
// context (db.WithUserScope) writes rows as that user whatever UserID says.
type Row struct {
	ID          string
	ContentID   string
	ContentHash string
	Name        string
	Content     string
	Metadata    map[string]any
	Vector      []float32
	UserID      string
}

// Mode selects how Search ranks.
type Mode string

// Search modes, named as Agno's search_type values.
const (
	Vector  Mode = "vector"
	Keyword Mode = "keyword"
	Hybrid  Mode = "hybrid"
)

// MaxLimit bounds Query.Limit.
const MaxLimit = 1000

// Query is one search. Vector is needed for Vector and Hybrid, Text for
// Keyword and Hybrid. Filters match metadata keys exactly (strings, numbers,
// booleans); a filtered search considers only matching rows.
type Query struct {
	Mode    Mode
	Vector  []float32
	Text    string
	Limit   int
	Filters map[string]any
}

// Hit is one result, best first. Score is the cosine similarity for Vector
// and the fused RRF score for Hybrid; for Keyword it is the store's text
// rank, higher better: the negated BM25 rank in the embedded store,
// Postgres's ts_rank_cd in pgvector (scores of the two are not comparable).
type Hit struct {
	Row
	Score float64
}

// Store is a vector store. Under a user scope in ctx, Search sees the user's
// rows and shared rows (pre-filtered inside the index query, so a user with
// few rows still gets Limit results), and writes and deletes touch only the
// user's rows. Without a scope (an admin) every row is visible and writable.
type Store interface {
	// Upsert inserts rows or replaces those with the same ID (and owner).
	Upsert(ctx context.Context, rows []Row) error
	Search(ctx context.Context, q Query) ([]Hit, error)
	// DeleteContent deletes every row of a content id.
	DeleteContent(ctx context.Context, contentID string) error
	// UpdateMetadata sets the metadata of every row of a content id the
	// caller may write to meta, plus each row's current values of the keys
	// in keep that meta does not set (a chunk's own keys); filters match
	// the new metadata from then on.
	UpdateMetadata(ctx context.Context, contentID string, meta map[string]any, keep ...string) error
	// HasContentHash reports whether rows with the hash exist for the
	// caller's owner (scoped: the user; unscoped: shared).
	HasContentHash(ctx context.Context, hash string) (bool, error)
	// Count counts the rows the caller can see.
	Count(ctx context.Context) (int, error)
	Close() error
}

// ContentReplacer is the optional ability to replace every row of a content
// by rows in one step: whoever replaces a content last leaves their rows
// alone, also against a replace by another process. Separate DeleteContent
// and Upsert calls of two processes (two replicas indexing an upload of one
// file at once) interleave and leave both sets of rows.
type ContentReplacer interface {
	// ReplaceContent deletes the rows of contentID the caller may write
	// and upserts rows (each of that content), atomically.
	ReplaceContent(ctx context.Context, contentID string, rows []Row) error
}

// Reranker reorders hits for a query (a cross-encoder, an API); optional,
// applied by the knowledge base after Search.
type Reranker interface {
	Rerank(ctx context.Context, query string, hits []Hit) ([]Hit, error)
}

var filterKey = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}$`)

// CheckQuery validates q for a store of dims dimensions and fills defaults
// (mode Hybrid when both vector and text are given, Limit 10).
func CheckQuery(q *Query, dims int) error {
	if q.Limit == 0 {
		q.Limit = 10
	}
	if q.Limit < 0 || q.Limit > MaxLimit {
		return fmt.Errorf("%w: limit %d is outside 1..%d", ErrInvalidQuery, q.Limit, MaxLimit)
	}
	if q.Mode == "" {
		switch {
		case q.Vector != nil && q.Text != "":
			q.Mode = Hybrid
		case q.Vector != nil:
			q.Mode = Vector
		default:
			q.Mode = Keyword
		}
	}
	switch q.Mode {
	case Vector, Hybrid:
		if len(q.Vector) != dims {
			return fmt.Errorf("%w: query vector has %d dimensions, the store %d", ErrInvalidQuery, len(q.Vector), dims)
		}
		if i := nonFinite(q.Vector); i >= 0 {
			return fmt.Errorf("%w: query vector has a NaN or infinite value at %d", ErrInvalidQuery, i)
		}
		if isZero(q.Vector) {
			return fmt.Errorf("%w: query vector is all zeros: it has no cosine similarity to anything", ErrInvalidQuery)
		}
	case Keyword:
	default:
		return fmt.Errorf("%w: search type %q: use vector, keyword or hybrid", ErrInvalidQuery, q.Mode)
	}
	if q.Mode != Vector && q.Text == "" && q.Mode == Keyword {
		return fmt.Errorf("%w: a keyword search needs text", ErrInvalidQuery)
	}
	for k, v := range q.Filters {
		if !filterKey.MatchString(k) {
			return fmt.Errorf("%w: filter key %q: use letters, digits, _ . -", ErrInvalidQuery, k)
		}
		switch x := v.(type) {
		case float64:
			if math.IsNaN(x) || math.IsInf(x, 0) {
				return fmt.Errorf("%w: filter %q: %v is not a number a row can hold", ErrInvalidQuery, k, x)
			}
		case float32:
			if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
				return fmt.Errorf("%w: filter %q: %v is not a number a row can hold", ErrInvalidQuery, k, x)
			}
		case string, bool, int, int64:
		default:
			return fmt.Errorf("%w: filter %q: value must be a string, number or boolean", ErrInvalidQuery, k)
		}
	}
	return nil
}

// CheckRows validates rows for a store of dims dimensions.
func CheckRows(rows []Row, dims int) error {
	for _, r := range rows {
		if r.ID == "" || r.ContentID == "" {
			return fmt.Errorf("%w: a row needs an id and a content id", ErrInvalidQuery)
		}
		if len(r.Vector) != dims {
			return fmt.Errorf("%w: row %s has %d dimensions, the store %d", ErrInvalidQuery, r.ID, len(r.Vector), dims)
		}
		if i := nonFinite(r.Vector); i >= 0 {
			return fmt.Errorf("%w: row %s has a NaN or infinite value at %d", ErrInvalidQuery, r.ID, i)
		}
		if isZero(r.Vector) {
			// pgvector leaves it out of the index; no search would find it
			return fmt.Errorf("%w: row %s has an all-zero vector: it has no cosine similarity to anything", ErrInvalidQuery, r.ID)
		}
	}
	return nil
}

// CheckContentRows checks rows as ReplaceContent takes them: as CheckRows
// does, and every row of contentID.
func CheckContentRows(contentID string, rows []Row, dims int) error {
	if err := CheckRows(rows, dims); err != nil {
		return err
	}
	for _, r := range rows {
		if r.ContentID != contentID {
			return fmt.Errorf("%w: row %s is of content %q, not %q", ErrInvalidQuery, r.ID, r.ContentID, contentID)
		}
	}
	return nil
}

// isZero reports whether v has no non-zero value (cosine is undefined).
func isZero(v []float32) bool {
	for _, x := range v {
		if x != 0 {
			return false
		}
	}
	return true
}

// nonFinite returns the index of v's first NaN or infinite value, or -1.
func nonFinite(v []float32) int {
	for i, x := range v {
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return i
		}
	}
	return -1
}

// RRFK is the reciprocal rank fusion constant (Cormack et al. use 60).
const RRFK = 60

// FuseRRF merges ranked lists by reciprocal rank fusion: a row's score is
// the sum of 1/(RRFK+rank) over the lists it appears in (rank from 1).
func FuseRRF(limit int, lists ...[]Hit) []Hit {
	score := map[string]float64{}
	first := map[string]Hit{}
	var order []string
	for _, l := range lists {
		for i, h := range l {
			if _, ok := first[h.ID]; !ok {
				first[h.ID] = h
				order = append(order, h.ID)
			}
			score[h.ID] += 1 / float64(RRFK+i+1)
		}
	}
	out := make([]Hit, 0, len(order))
	for _, id := range order {
		h := first[id]
		h.Score = score[id]
		out = append(out, h)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Score > out[j].Score })
	if len(out) > limit {
		out = out[:limit]
	}
	return out
}
