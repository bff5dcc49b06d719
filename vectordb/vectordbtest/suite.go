// Package vectordbtest is the one conformance suite every vectordb.Store
// passes: search modes, metadata filters, replacement, and per-user
// isolation with shared rows, the scope applied before ranking.
package vectordbtest

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"testing"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/vectordb"
)

// Dims is the vector length the suite's stores are opened with.
const Dims = 8

// Open returns a fresh, empty store of Dims dimensions; the suite closes it.
type Open func(t *testing.T) vectordb.Store

// axis is a unit vector leaning towards axis i, tilted by j so rows differ.
func axis(i int, j float64) []float32 {
	v := make([]float32, Dims)
	v[i%Dims] = 1
	v[(i+1)%Dims] = float32(j)
	n := float32(math.Sqrt(1 + j*j))
	for k := range v {
		v[k] /= n
	}
	return v
}

func row(id, user string, vec []float32, content string, meta map[string]any) vectordb.Row {
	return vectordb.Row{ID: id, ContentID: "c-" + id, ContentHash: "h-" + id, Name: "doc " + id, Content: content, Metadata: meta, Vector: vec, UserID: user}
}

func ids(h []vectordb.Hit) []string {
	out := make([]string, len(h))
	for i, x := range h {
		out[i] = x.ID
	}
	return out
}

func as(user string) context.Context { return db.WithUserScope(context.Background(), user) }

// Run runs the suite.
func Run(t *testing.T, open Open) {
	t.Run("VectorSearchRanksByCosine", func(t *testing.T) {
		s := open(t)
		ctx := context.Background()
		must(t, s.Upsert(ctx, []vectordb.Row{
			row("a", "", axis(0, 0), "alpha", nil), row("b", "", axis(0, 0.5), "beta", nil), row("c", "", axis(3, 0), "gamma", nil)}))
		h, err := s.Search(ctx, vectordb.Query{Mode: vectordb.Vector, Vector: axis(0, 0.05), Limit: 2})
		must(t, err)
		if fmt.Sprint(ids(h)) != "[a b]" || h[0].Score < h[1].Score || h[0].Score < 0.99 {
			t.Fatalf("hits %v scores %v", ids(h), h)
		}
		if h[0].Content != "alpha" || h[0].Name != "doc a" || h[0].ContentID != "c-a" {
			t.Fatalf("row fields lost: %+v", h[0].Row)
		}
	})

	t.Run("ScopedSearchSeesOwnAndSharedOnly", func(t *testing.T) {
		s := open(t)
		ctx := context.Background()
		must(t, s.Upsert(as("alice"), []vectordb.Row{row("a1", "", axis(0, 0), "alice note", nil)}))
		must(t, s.Upsert(as("bob"), []vectordb.Row{row("b1", "", axis(0, 0.01), "bob note", nil)}))
		must(t, s.Upsert(ctx, []vectordb.Row{row("s1", "", axis(0, 0.3), "shared note", nil)}))
		for _, mode := range []vectordb.Mode{vectordb.Vector, vectordb.Keyword, vectordb.Hybrid} {
			h, err := s.Search(as("alice"), vectordb.Query{Mode: mode, Vector: axis(0, 0), Text: "note", Limit: 10})
			must(t, err)
			got := map[string]bool{}
			for _, x := range h {
				got[x.ID] = true
			}
			if !got["a1"] || !got["s1"] || got["b1"] || len(h) != 2 {
				t.Fatalf("%s: alice got %v", mode, ids(h))
			}
			h, err = s.Search(ctx, vectordb.Query{Mode: mode, Vector: axis(0, 0), Text: "note", Limit: 10})
			must(t, err)
			if len(h) != 3 {
				t.Fatalf("%s: admin got %v", mode, ids(h))
			}
		}
		if n, _ := s.Count(as("bob")); n != 2 {
			t.Fatalf("bob counts %d rows, want 2", n)
		}
	})

	t.Run("ScopeIsAPreFilter", func(t *testing.T) {
		// 300 of bob's rows sit right on the query; carol has 4 rows and
		// there are 8 shared ones further away. Carol still gets 10 hits.
		s := open(t)
		var bob []vectordb.Row
		for i := range 300 {
			bob = append(bob, row(fmt.Sprintf("b%d", i), "", axis(0, float64(i)/3000), "close", nil))
		}
		must(t, s.Upsert(as("bob"), bob))
		var carol, shared []vectordb.Row
		for i := range 4 {
			carol = append(carol, row(fmt.Sprintf("c%d", i), "", axis(2, float64(i)/10), "far", nil))
		}
		for i := range 8 {
			shared = append(shared, row(fmt.Sprintf("s%d", i), "", axis(4, float64(i)/10), "far", nil))
		}
		must(t, s.Upsert(as("carol"), carol))
		must(t, s.Upsert(context.Background(), shared))
		h, err := s.Search(as("carol"), vectordb.Query{Mode: vectordb.Vector, Vector: axis(0, 0), Limit: 10})
		must(t, err)
		if len(h) != 10 {
			t.Fatalf("carol got %d hits, want 10: %v", len(h), ids(h))
		}
		for _, x := range h {
			if x.UserID != "carol" && x.UserID != "" {
				t.Fatalf("carol got %s of %q", x.ID, x.UserID)
			}
		}
	})

	t.Run("ScopedWritesAreTheCallers", func(t *testing.T) {
		s := open(t)
		must(t, s.Upsert(as("alice"), []vectordb.Row{row("x", "mallory", axis(1, 0), "x", nil)}))
		h, err := s.Search(as("alice"), vectordb.Query{Mode: vectordb.Vector, Vector: axis(1, 0), Limit: 1})
		must(t, err)
		if len(h) != 1 || h[0].UserID != "alice" {
			t.Fatalf("row written as %v", h)
		}
		if h, _ := s.Search(as("mallory"), vectordb.Query{Mode: vectordb.Vector, Vector: axis(1, 0), Limit: 1}); len(h) != 0 {
			t.Fatalf("mallory sees %v", ids(h))
		}
		// bob cannot replace alice's row by reusing its id
		if err := s.Upsert(as("bob"), []vectordb.Row{row("x", "", axis(1, 0), "bob's", nil)}); !errors.Is(err, db.ErrNotFound) {
			t.Fatalf("bob overwrote alice's row: %v", err)
		}
	})

	t.Run("ScopedDeleteLeavesSharedAndOthers", func(t *testing.T) {
		s := open(t)
		ctx := context.Background()
		shared := row("s", "", axis(1, 0), "shared", nil)
		shared.ContentID = "same"
		mine := row("m", "", axis(1, 0.1), "mine", nil)
		mine.ContentID = "same"
		must(t, s.Upsert(ctx, []vectordb.Row{shared}))
		must(t, s.Upsert(as("alice"), []vectordb.Row{mine}))
		must(t, s.DeleteContent(as("bob"), "same"))
		must(t, s.DeleteContent(as("alice"), "same"))
		h, err := s.Search(ctx, vectordb.Query{Mode: vectordb.Vector, Vector: axis(1, 0), Limit: 5})
		must(t, err)
		if fmt.Sprint(ids(h)) != "[s]" {
			t.Fatalf("after alice's delete: %v", ids(h))
		}
		must(t, s.DeleteContent(ctx, "same"))
		if n, _ := s.Count(ctx); n != 0 {
			t.Fatalf("admin delete left %d rows", n)
		}
	})

	t.Run("ReplaceContentIsScopedAndReplacesTheWholeContent", func(t *testing.T) {
		s := open(t)
		r, ok := s.(vectordb.ContentReplacer)
		if !ok {
			t.Skip("the store cannot replace a content in one step")
		}
		ctx := context.Background()
		shared := row("s", "", axis(1, 0), "shared", nil)
		shared.ContentID = "same"
		old1, old2 := row("m1", "", axis(1, 0.1), "mine one", nil), row("m2", "", axis(1, 0.2), "mine two", nil)
		old1.ContentID, old2.ContentID = "same", "same"
		must(t, s.Upsert(ctx, []vectordb.Row{shared}))
		must(t, s.Upsert(as("alice"), []vectordb.Row{old1, old2}))
		next := row("m3", "", axis(1, 0.3), "mine three", nil)
		next.ContentID = "same"
		must(t, r.ReplaceContent(as("alice"), "same", []vectordb.Row{next}))
		h, err := s.Search(ctx, vectordb.Query{Mode: vectordb.Vector, Vector: axis(1, 0), Limit: 5})
		must(t, err)
		if fmt.Sprint(ids(h)) != "[s m3]" {
			t.Fatalf("after alice's replace: %v, want the shared row and her new one", ids(h))
		}
		if h[1].UserID != "alice" {
			t.Fatalf("the new row is %q's, want alice's", h[1].UserID)
		}
		if err := r.ReplaceContent(ctx, "same", []vectordb.Row{row("x", "", axis(2, 0), "other", nil)}); !errors.Is(err, vectordb.ErrInvalidQuery) {
			t.Fatalf("a row of another content: %v, want ErrInvalidQuery", err)
		}
		if n, _ := s.Count(ctx); n != 2 {
			t.Fatalf("a refused replace left %d rows, want 2", n)
		}
	})
	t.Run("UpsertReplacesByID", func(t *testing.T) {
		s := open(t)
		ctx := context.Background()
		must(t, s.Upsert(ctx, []vectordb.Row{row("r", "", axis(1, 0), "old text", nil)}))
		must(t, s.Upsert(ctx, []vectordb.Row{row("r", "", axis(5, 0), "new text", nil)}))
		if n, _ := s.Count(ctx); n != 1 {
			t.Fatalf("%d rows after replace", n)
		}
		h, err := s.Search(ctx, vectordb.Query{Mode: vectordb.Vector, Vector: axis(5, 0), Limit: 5})
		must(t, err)
		if len(h) != 1 || h[0].Content != "new text" || h[0].Score < 0.99 {
			t.Fatalf("replaced row: %v", h)
		}
		if h, _ := s.Search(ctx, vectordb.Query{Mode: vectordb.Keyword, Text: "old", Limit: 5}); len(h) != 0 {
			t.Fatalf("old text still indexed: %v", ids(h))
		}
	})

	t.Run("UpsertOfOneIDTwiceInABatchKeepsTheLast", func(t *testing.T) {
		s := open(t)
		ctx := as("alice")
		must(t, s.Upsert(ctx, []vectordb.Row{
			row("d", "", axis(2, 0), "first text", nil), row("d", "", axis(2, 0.1), "second text", nil)}))
		if n, _ := s.Count(ctx); n != 1 {
			t.Fatalf("%d rows after a batch with one id twice", n)
		}
		for _, mode := range []vectordb.Mode{vectordb.Vector, vectordb.Hybrid} {
			h, err := s.Search(ctx, vectordb.Query{Mode: mode, Vector: axis(2, 0), Text: "text", Limit: 5})
			must(t, err)
			if len(h) != 1 || h[0].Content != "second text" {
				t.Fatalf("%s: hits %v (want the one row, second text): %+v", mode, ids(h), h)
			}
		}
		// deleting the content leaves nothing behind, and a new row is not
		// shadowed by a stale copy of the old one
		must(t, s.DeleteContent(ctx, "c-d"))
		must(t, s.Upsert(ctx, []vectordb.Row{row("e", "", axis(5, 0), "other", nil)}))
		h, err := s.Search(ctx, vectordb.Query{Mode: vectordb.Vector, Vector: axis(2, 0), Limit: 5})
		must(t, err)
		if len(h) != 1 || h[0].ID != "e" {
			t.Fatalf("after delete: %v", h)
		}
	})

	t.Run("KeywordAndHybrid", func(t *testing.T) {
		s := open(t)
		ctx := context.Background()
		must(t, s.Upsert(ctx, []vectordb.Row{
			row("v", "", axis(0, 0), "nothing in common", nil),
			row("k", "", axis(6, 0), "the zebra crossing manual", nil),
			row("o", "", axis(3, 0), "other text", nil)}))
		h, err := s.Search(ctx, vectordb.Query{Mode: vectordb.Keyword, Text: "Zebra?! (crossing) AND", Limit: 5})
		must(t, err)
		if len(h) != 1 || h[0].ID != "k" {
			t.Fatalf("keyword: %v", ids(h))
		}
		h, err = s.Search(ctx, vectordb.Query{Mode: vectordb.Hybrid, Vector: axis(0, 0), Text: "zebra", Limit: 2})
		must(t, err)
		got := map[string]bool{}
		for _, x := range h {
			got[x.ID] = true
		}
		if !got["v"] || !got["k"] {
			t.Fatalf("hybrid should fuse the vector hit and the keyword hit: %v", ids(h))
		}
		if h[0].ID != "v" && h[0].ID != "k" {
			t.Fatalf("hybrid order %v", ids(h))
		}
	})

	t.Run("MetadataFilters", func(t *testing.T) {
		s := open(t)
		ctx := context.Background()
		must(t, s.Upsert(ctx, []vectordb.Row{
			row("1", "", axis(0, 0), "one", map[string]any{"lang": "go", "year": 2024, "draft": false}),
			row("2", "", axis(0, 0.1), "two", map[string]any{"lang": "py", "year": 2024, "draft": true}),
			row("3", "", axis(0, 0.2), "three", map[string]any{"lang": "go", "year": 2023, "draft": true})}))
		cases := []struct {
			f    map[string]any
			want string
		}{
			{map[string]any{"lang": "go"}, "[1 3]"},
			{map[string]any{"year": float64(2024)}, "[1 2]"},
			{map[string]any{"draft": true, "lang": "go"}, "[3]"},
			{map[string]any{"lang": "rust"}, "[]"},
			// a value matches only a value of its own JSON type
			{map[string]any{"draft": float64(1)}, "[]"},
			{map[string]any{"draft": 0}, "[]"},
			{map[string]any{"year": "2024"}, "[]"},
			{map[string]any{"year": true}, "[]"},
		}
		for _, c := range cases {
			for _, mode := range []vectordb.Mode{vectordb.Vector, vectordb.Hybrid} {
				h, err := s.Search(ctx, vectordb.Query{Mode: mode, Vector: axis(0, 0), Text: "one two three", Limit: 5, Filters: c.f})
				must(t, err)
				if mode == vectordb.Vector && fmt.Sprint(ids(h)) != c.want {
					t.Fatalf("%s %v: got %v, want %s", mode, c.f, ids(h), c.want)
				}
				if mode == vectordb.Hybrid && len(h) != (len(c.want)-1)/2 {
					t.Fatalf("%s %v: got %v, want %s", mode, c.f, ids(h), c.want)
				}
			}
		}
		if _, err := s.Search(ctx, vectordb.Query{Vector: axis(0, 0), Filters: map[string]any{"bad key'": 1}}); !errors.Is(err, vectordb.ErrInvalidQuery) {
			t.Fatalf("bad filter key: %v", err)
		}
		// no JSON number is NaN or infinite (a YAML .nan is): refused, not
		// a driver's JSON error or a NULL bound in its place
		for _, bad := range []any{math.NaN(), math.Inf(-1), float32(math.Inf(1))} {
			if _, err := s.Search(ctx, vectordb.Query{Vector: axis(0, 0), Filters: map[string]any{"year": bad}}); !errors.Is(err, vectordb.ErrInvalidQuery) {
				t.Fatalf("filter value %v: %v", bad, err)
			}
		}
	})

	t.Run("UpdateMetadataChangesWhatFiltersMatch", func(t *testing.T) {
		s := open(t)
		ctx := context.Background()
		mk := func(id, user string, chunk int) vectordb.Row {
			r := row(id, user, axis(0, float64(chunk)/10), "text "+id, map[string]any{"chunk": chunk, "topic": "space", "old": true})
			r.ContentID = "doc"
			return r
		}
		must(t, s.Upsert(ctx, []vectordb.Row{mk("1", "", 1), mk("2", "", 2)}))
		must(t, s.Upsert(as("alice"), []vectordb.Row{mk("a", "", 1)}))
		// bob may not touch the shared rows nor alice's; nothing changes
		must(t, s.UpdateMetadata(as("bob"), "doc", map[string]any{"topic": "bob"}, "chunk"))
		must(t, s.UpdateMetadata(ctx, "doc", map[string]any{"topic": "astronomy", "year": 2024}, "chunk"))
		for _, mode := range []vectordb.Mode{vectordb.Vector, vectordb.Keyword} {
			q := vectordb.Query{Mode: mode, Vector: axis(0, 0), Text: "text", Limit: 5}
			q.Filters = map[string]any{"topic": "astronomy", "year": 2024}
			h, err := s.Search(ctx, q)
			must(t, err)
			if len(h) != 3 {
				t.Fatalf("%s: the new metadata matches %v, want all 3 rows", mode, ids(h))
			}
			for _, x := range h {
				if x.Metadata["old"] != nil || x.Metadata["chunk"] == nil {
					t.Fatalf("%s: row %s metadata %v: want the old keys gone and chunk kept", mode, x.ID, x.Metadata)
				}
			}
			for _, f := range []map[string]any{{"topic": "space"}, {"topic": "bob"}, {"old": true}} {
				q.Filters = f
				if h, _ := s.Search(ctx, q); len(h) != 0 {
					t.Fatalf("%s: stale metadata %v still matches %v", mode, f, ids(h))
				}
			}
		}
		// a scoped update changes the caller's rows only
		must(t, s.UpdateMetadata(as("alice"), "doc", map[string]any{"topic": "mine"}))
		h, err := s.Search(ctx, vectordb.Query{Mode: vectordb.Vector, Vector: axis(0, 0), Limit: 5, Filters: map[string]any{"topic": "mine"}})
		must(t, err)
		if fmt.Sprint(ids(h)) != "[a]" || h[0].Metadata["chunk"] != nil {
			t.Fatalf("alice's update: %v", h)
		}
	})

	t.Run("ContentHashIsPerOwner", func(t *testing.T) {
		s := open(t)
		must(t, s.Upsert(as("alice"), []vectordb.Row{row("a", "", axis(0, 0), "a", nil)}))
		if ok, err := s.HasContentHash(as("alice"), "h-a"); err != nil || !ok {
			t.Fatalf("alice's hash: %v %v", ok, err)
		}
		if ok, _ := s.HasContentHash(as("bob"), "h-a"); ok {
			t.Fatal("bob sees alice's hash")
		}
		if ok, _ := s.HasContentHash(context.Background(), "h-a"); ok {
			t.Fatal("the shared bucket has alice's hash")
		}
	})

	t.Run("InvalidInput", func(t *testing.T) {
		s := open(t)
		ctx := context.Background()
		if err := s.Upsert(ctx, []vectordb.Row{row("a", "", []float32{1, 2}, "a", nil)}); !errors.Is(err, vectordb.ErrInvalidQuery) {
			t.Fatalf("short vector: %v", err)
		}
		if _, err := s.Search(ctx, vectordb.Query{Mode: vectordb.Vector, Vector: []float32{1}}); !errors.Is(err, vectordb.ErrInvalidQuery) {
			t.Fatalf("short query: %v", err)
		}
		for _, bad := range []float32{float32(math.NaN()), float32(math.Inf(1))} {
			v := axis(0, 0)
			v[1] = bad
			if err := s.Upsert(ctx, []vectordb.Row{row("a", "", v, "a", nil)}); !errors.Is(err, vectordb.ErrInvalidQuery) {
				t.Fatalf("row with %v: %v", bad, err)
			}
			if _, err := s.Search(ctx, vectordb.Query{Mode: vectordb.Vector, Vector: v}); !errors.Is(err, vectordb.ErrInvalidQuery) {
				t.Fatalf("query with %v: %v", bad, err)
			}
		}
		// a zero vector has no direction: its cosine is undefined (NaN on
		// pgvector, whose index leaves such rows out)
		zero := make([]float32, Dims)
		if err := s.Upsert(ctx, []vectordb.Row{row("z", "", zero, "z", nil)}); !errors.Is(err, vectordb.ErrInvalidQuery) {
			t.Fatalf("zero vector row: %v", err)
		}
		for _, mode := range []vectordb.Mode{vectordb.Vector, vectordb.Hybrid} {
			if _, err := s.Search(ctx, vectordb.Query{Mode: mode, Vector: zero, Text: "z"}); !errors.Is(err, vectordb.ErrInvalidQuery) {
				t.Fatalf("%s query with a zero vector: %v", mode, err)
			}
		}
		if _, err := s.Search(ctx, vectordb.Query{Mode: "semantic", Vector: axis(0, 0)}); !errors.Is(err, vectordb.ErrInvalidQuery) {
			t.Fatalf("bad mode: %v", err)
		}
		if h, err := s.Search(ctx, vectordb.Query{Mode: vectordb.Vector, Vector: axis(0, 0)}); err != nil || len(h) != 0 {
			t.Fatalf("empty store: %v %v", h, err)
		}
	})

	t.Run("VectorsOfAnyLength", func(t *testing.T) {
		// cosine ignores length: a component past halfvec's 65,504 and
		// components near float32's underflow are stored, found and scored
		s := open(t)
		ctx := context.Background()
		big, tiny := make([]float32, Dims), make([]float32, Dims)
		big[0], big[1] = 1e5, 1
		tiny[2], tiny[3] = 1e-30, 1e-30
		must(t, s.Upsert(ctx, []vectordb.Row{row("big", "", big, "big", nil), row("tiny", "", tiny, "tiny", nil)}))
		for id, q := range map[string][]float32{"big": axis(0, 0), "tiny": axis(2, 1)} {
			h, err := s.Search(ctx, vectordb.Query{Mode: vectordb.Vector, Vector: q, Limit: 1})
			must(t, err)
			if len(h) != 1 || h[0].ID != id || math.IsNaN(h[0].Score) || h[0].Score < 0.99 {
				t.Fatalf("query for %s: hits %+v", id, h)
			}
		}
	})

	t.Run("ManyFilters", func(t *testing.T) {
		// hundreds of filters work as a few do
		s := open(t)
		ctx := context.Background()
		meta := map[string]any{}
		for i := range 600 {
			meta[fmt.Sprintf("k%d", i)] = i
		}
		must(t, s.Upsert(ctx, []vectordb.Row{row("m", "", axis(0, 0), "many keys", meta), row("o", "", axis(0, 0.1), "many keys", nil)}))
		for _, mode := range []vectordb.Mode{vectordb.Vector, vectordb.Keyword, vectordb.Hybrid} {
			h, err := s.Search(ctx, vectordb.Query{Mode: mode, Vector: axis(0, 0), Text: "keys", Limit: 5, Filters: meta})
			must(t, err)
			if fmt.Sprint(ids(h)) != "[m]" {
				t.Fatalf("%s: hits %v, want [m]", mode, ids(h))
			}
		}
	})

	t.Run("ContentWithNULOrInvalidUTF8IsStoredAndFound", func(t *testing.T) {
		// a store may replace what its database cannot hold (U+FFFD, as
		// Agno does for NUL), but the row is stored and found
		s := open(t)
		ctx := context.Background()
		must(t, s.Upsert(ctx, []vectordb.Row{row("n", "", axis(1, 0), "ceres\x00dwarf \xffplanet", nil)}))
		for _, mode := range []vectordb.Mode{vectordb.Vector, vectordb.Keyword} {
			h, err := s.Search(ctx, vectordb.Query{Mode: mode, Vector: axis(1, 0), Text: "planet", Limit: 5})
			must(t, err)
			if fmt.Sprint(ids(h)) != "[n]" {
				t.Fatalf("%s: hits %v, want [n]", mode, ids(h))
			}
		}
	})

	t.Run("ConcurrentWritesAndSearches", func(t *testing.T) {
		s := open(t)
		var wg sync.WaitGroup
		for w := range 4 {
			wg.Add(2)
			go func() {
				defer wg.Done()
				for i := range 20 {
					user := fmt.Sprintf("u%d", w)
					if err := s.Upsert(as(user), []vectordb.Row{row(fmt.Sprintf("%d-%d", w, i), "", axis(i, float64(w)/10), "text", nil)}); err != nil {
						t.Error(err)
						return
					}
				}
			}()
			go func() {
				defer wg.Done()
				for range 20 {
					if _, err := s.Search(as(fmt.Sprintf("u%d", w)), vectordb.Query{Mode: vectordb.Hybrid, Vector: axis(w, 0), Text: "text", Limit: 5}); err != nil {
						t.Error(err)
						return
					}
				}
			}()
		}
		wg.Wait()
		if n, _ := s.Count(context.Background()); n != 80 {
			t.Fatalf("%d rows, want 80", n)
		}
	})
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
