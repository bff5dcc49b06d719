package knowledge

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/dbtest/testdbs"
	"github.com/agentryhq/agentry/embedder/local"
	"github.com/agentryhq/agentry/knowledge/reader"
	"github.com/agentryhq/agentry/vectordb"
	"github.com/agentryhq/agentry/vectordb/embedded"
)

func newKB(t testing.TB, d *db.DB, mod func(*Config)) *Knowledge {
	t.Helper()
	e := local.New(local.Config{Dimensions: 64})
	vs, err := embedded.Open(context.Background(), embedded.Config{Path: filepath.Join(t.TempDir(), "v.db"), Dimensions: 64, EmbedderID: e.ID()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { vs.Close() })
	cfg := Config{Name: "kb", DB: d, Vectors: vs, Embedder: e}
	if mod != nil {
		mod(&cfg)
	}
	k, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func as(u string) context.Context { return db.WithUserScope(context.Background(), u) }

func TestInsertAndSearch_EveryDriver(t *testing.T) {
	testdbs.Each(t, func(t *testing.T, d *db.DB) {
		if _, ok := d.Driver().(db.KnowledgeDriver); !ok { // the in-memory driver stores no knowledge: New says so
			if _, err := New(Config{DB: d, Vectors: nil, Embedder: nil}); !errors.Is(err, db.ErrNoKnowledge) {
				t.Fatalf("err %v", err)
			}
			return
		}
		k := newKB(t, d, nil)
		ctx := context.Background()
		res, err := k.Insert(ctx, Content{Text: "The orbital period of Mars is 687 days.\n\nJupiter has ninety-five moons.", Metadata: map[string]any{"topic": "space"}})
		if err != nil {
			t.Fatal(err)
		}
		if res.Content.Status != db.KnowledgeCompleted || res.Chunks == 0 || res.Content.Size == 0 || res.Content.Type != "text/plain" {
			t.Fatalf("row %+v", res.Content)
		}
		docs, err := k.Search(ctx, "mars orbital period", nil, 3)
		if err != nil || len(docs) == 0 || !strings.Contains(docs[0].Content, "Mars") {
			t.Fatalf("search: %v %+v", err, docs)
		}
		if docs[0].MetaData["topic"] != "space" || docs[0].ContentID != res.Content.ID {
			t.Fatalf("hit lost metadata or content id: %+v", docs[0])
		}
		if docs, _ := k.Search(ctx, "mars", map[string]any{"topic": "cooking"}, 3); len(docs) != 0 {
			t.Fatalf("filter ignored: %+v", docs)
		}
		rows, total, err := k.List(ctx, db.KnowledgeFilter{Limit: 10, Page: 1})
		if err != nil || total != 1 || len(rows) != 1 || rows[0].LinkedTo != "kb" {
			t.Fatalf("list: %v %d %+v", err, total, rows)
		}
		if err := k.Delete(ctx, res.Content.ID); err != nil {
			t.Fatal(err)
		}
		if docs, _ := k.Search(ctx, "mars", nil, 3); len(docs) != 0 {
			t.Fatalf("deleted content still found: %+v", docs)
		}
		if _, err := k.Get(ctx, res.Content.ID); !errors.Is(err, db.ErrNotFound) {
			t.Fatalf("deleted row: %v", err)
		}
	})
}

func TestInsert_SameContentTwiceIsANoOp(t *testing.T) {
	t.Parallel()
	k := newKB(t, testdbs.SQLite(t), nil)
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "notes.md")
	os.WriteFile(path, []byte("# Notes\nsome text about gardening"), 0o600)
	first, err := k.Insert(ctx, Content{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	again, err := k.Insert(ctx, Content{Path: path})
	if err != nil || !again.Skipped || again.Content.ID != first.Content.ID {
		t.Fatalf("second insert: %v %+v", err, again)
	}
	// changed bytes at the same path re-index under the same id
	os.WriteFile(path, []byte("# Notes\nnow about beekeeping"), 0o600)
	changed, err := k.Insert(ctx, Content{Path: path})
	if err != nil || changed.Skipped || changed.Content.ID != first.Content.ID {
		t.Fatalf("changed insert: %v %+v", err, changed)
	}
	if docs, _ := k.SearchQuery(ctx, Query{Text: "gardening", Mode: vectordb.Keyword}); len(docs) != 0 {
		t.Fatalf("old text still indexed: %+v", docs)
	}
	if n, _ := k.cfg.Vectors.Count(ctx); n != changed.Chunks {
		t.Fatalf("%d vectors, want %d", n, changed.Chunks)
	}
}

func failedWith(t *testing.T, k *Knowledge, c Content, want error, msg string) {
	t.Helper()
	res, err := k.Insert(context.Background(), c)
	if !errors.Is(err, want) {
		t.Fatalf("err %v, want %v", err, want)
	}
	row, gerr := k.Get(context.Background(), res.Content.ID)
	if gerr != nil || row.Status != db.KnowledgeFailed || !strings.Contains(row.StatusMessage, msg) {
		t.Fatalf("row %+v %v, want FAILED with %q", row, gerr, msg)
	}
	if n, _ := k.cfg.Vectors.Count(context.Background()); n != 0 {
		t.Fatalf("%d vectors left by a failed insert", n)
	}
}

func TestInsert_BadInputFailsWithTheReasonAndNothingIndexed(t *testing.T) {
	t.Parallel()
	k := newKB(t, testdbs.SQLite(t), func(c *Config) { c.MaxBytes = 1 << 20 })
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.txt")
	os.WriteFile(empty, nil, 0o600)
	failedWith(t, k, Content{Path: empty}, reader.ErrEmpty, "empty")
	big := filepath.Join(dir, "big.txt")
	f, _ := os.Create(big)
	f.Truncate(200 << 20) // a 200 MB sparse file: refused by size before reading
	f.Close()
	failedWith(t, k, Content{Path: big}, ErrTooLarge, "cap")
	failedWith(t, k, Content{Data: []byte("caf\xe9 au lait"), Filename: "latin1.txt"}, reader.ErrInvalidUTF8, "UTF-8")
	failedWith(t, k, Content{Data: []byte("%PDF-1.4 no text"), Filename: "scan.pdf"}, reader.ErrMalformed, "pdf")
	var bomb bytes.Buffer
	z := zip.NewWriter(&bomb)
	w, _ := z.Create("word/document.xml")
	zeros := make([]byte, 1<<20)
	for range 100 {
		w.Write(zeros)
	}
	z.Close()
	failedWith(t, k, Content{Data: bomb.Bytes(), Filename: "bomb.docx"}, reader.ErrZipBomb, "zip bomb")

	local := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("secret")) }))
	defer local.Close()
	failedWith(t, k, Content{URL: local.URL + "/x"}, ErrFetch, "not a public destination")
}

func TestInsert_URLRedirectToLoopbackRefused(t *testing.T) {
	t.Parallel()
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("internal")) }))
	defer target.Close()
	// The redirector is allowed (its host is trusted by name); where it
	// points, 127.0.0.1, is not.
	redir := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target.URL+"/meta", http.StatusFound)
	}))
	defer redir.Close()
	k := newKB(t, testdbs.SQLite(t), func(c *Config) { c.Net.AllowHosts = []string{"localhost"} })
	u := strings.Replace(redir.URL, "127.0.0.1", "localhost", 1)
	failedWith(t, k, Content{URL: u}, ErrFetch, "127.0.0.1")
}

func TestInsert_URLAllowedByConfigAndCapped(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/big" {
			w.Write([]byte(strings.Repeat("x", 2000)))
			return
		}
		w.Header().Set("Content-Type", "text/html")
		w.Write([]byte("<h1>Saturn</h1><p>Saturn has rings made of ice.</p>"))
	}))
	defer srv.Close()
	k := newKB(t, testdbs.SQLite(t), func(c *Config) { c.Net.AllowNetworks = []string{"127.0.0.1/32"}; c.MaxBytes = 1000 })
	res, err := k.Insert(context.Background(), Content{URL: srv.URL + "/page"})
	if err != nil || res.Content.Type != "text/html" {
		t.Fatalf("%v %+v", err, res)
	}
	docs, _ := k.Search(context.Background(), "saturn rings", nil, 1)
	if len(docs) != 1 || !strings.Contains(docs[0].Content, "# Saturn") {
		t.Fatalf("%+v", docs)
	}
	failedWith2 := func() {
		r, err := k.Insert(context.Background(), Content{URL: srv.URL + "/big"})
		if !errors.Is(err, ErrTooLarge) || r.Content.Status != db.KnowledgeFailed {
			t.Fatalf("big body: %v", err)
		}
	}
	failedWith2()
}

func TestInsertAsync_ProcessingThenCompletedOrFailed(t *testing.T) {
	t.Parallel()
	k := newKB(t, testdbs.SQLite(t), nil)
	ctx := as("alice")
	row, err := k.InsertAsync(ctx, Content{Text: "async text about tea"})
	if err != nil || row.Status != db.KnowledgeProcessing || row.UserID != "alice" {
		t.Fatalf("%v %+v", err, row)
	}
	bad, err := k.InsertAsync(ctx, Content{Data: []byte{0x80, 0xff}, Filename: "x.txt"}) // not UTF-8 (and no UTF-16 byte order mark)
	if err != nil {
		t.Fatal(err)
	}
	k.Wait()
	if got, _ := k.Get(ctx, row.ID); got.Status != db.KnowledgeCompleted {
		t.Fatalf("good: %+v", got)
	}
	if got, _ := k.Get(ctx, bad.ID); got.Status != db.KnowledgeFailed || !strings.Contains(got.StatusMessage, "UTF-8") {
		t.Fatalf("bad: %+v", got)
	}
}

func TestIsolation_UsersAndSharedContent(t *testing.T) {
	t.Parallel()
	k := newKB(t, testdbs.SQLite(t), nil)
	admin := context.Background()
	shared, err := k.Insert(admin, Content{Text: "company holiday policy: twenty days"})
	if err != nil {
		t.Fatal(err)
	}
	mine, err := k.Insert(as("alice"), Content{Text: "alice's holiday plans: iceland"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := k.Insert(as("bob"), Content{Text: "bob's holiday plans: portugal"}); err != nil {
		t.Fatal(err)
	}
	docs, err := k.Search(as("alice"), "holiday plans", nil, 10)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range docs {
		if strings.Contains(d.Content, "bob") {
			t.Fatalf("alice sees bob's content: %+v", docs)
		}
	}
	if len(docs) != 2 {
		t.Fatalf("alice should see hers and the shared one: %+v", docs)
	}
	// shared content: visible, not writable by users (403), writable by admin
	if _, err := k.Get(as("alice"), shared.Content.ID); err != nil {
		t.Fatal(err)
	}
	if err := k.Delete(as("alice"), shared.Content.ID); !errors.Is(err, db.ErrForbidden) {
		t.Fatalf("user deleted shared content: %v", err)
	}
	row := *shared.Content
	row.Name = "renamed"
	if err := k.Update(as("alice"), &row); !errors.Is(err, db.ErrForbidden) {
		t.Fatalf("user updated shared content: %v", err)
	}
	// another user's content is missing, not forbidden
	if _, err := k.Get(as("bob"), mine.Content.ID); !errors.Is(err, db.ErrNotFound) {
		t.Fatalf("bob reads alice's row: %v", err)
	}
	if err := k.Delete(as("bob"), mine.Content.ID); !errors.Is(err, db.ErrNotFound) {
		t.Fatalf("bob deletes alice's row: %v", err)
	}
	if _, total, _ := k.List(as("bob"), db.KnowledgeFilter{Limit: 10, Page: 1}); total != 2 {
		t.Fatalf("bob lists %d rows, want his and the shared one", total)
	}
	if err := k.Delete(admin, shared.Content.ID); err != nil {
		t.Fatal(err)
	}
	// the same text inserted by two users is two contents
	a, _ := k.Insert(as("alice"), Content{Text: "same"})
	b, _ := k.Insert(as("bob"), Content{Text: "same"})
	if a.Content.ID == b.Content.ID || b.Skipped {
		t.Fatal("two users' identical uploads collided")
	}
}

func TestInsertMany_ReportsProgressAndGoesOn(t *testing.T) {
	t.Parallel()
	k := newKB(t, testdbs.SQLite(t), nil)
	var events []Progress
	res, err := k.InsertMany(context.Background(), []Content{{Text: "one two three"}, {Data: []byte{}, Filename: "e.txt"}, {Text: "four five"}},
		func(p Progress) { events = append(events, p) })
	if err == nil || !errors.Is(err, reader.ErrEmpty) {
		t.Fatalf("err %v", err)
	}
	if res[0].Content.Status != db.KnowledgeCompleted || res[2].Content.Status != db.KnowledgeCompleted || res[1].Content.Status != db.KnowledgeFailed {
		t.Fatal("statuses wrong")
	}
	done := 0
	for _, e := range events {
		if e.Done {
			done++
		}
	}
	if done != 3 {
		t.Fatalf("%d done events", done)
	}
}

func TestInsert_NeedsExactlyOneSource(t *testing.T) {
	t.Parallel()
	k := newKB(t, testdbs.SQLite(t), nil)
	if _, err := k.Insert(context.Background(), Content{Text: "a", URL: "http://x"}); !errors.Is(err, ErrNoSource) {
		t.Fatal(err)
	}
	if _, err := k.Insert(context.Background(), Content{}); !errors.Is(err, ErrNoSource) {
		t.Fatal(err)
	}
}

func TestUpdate_NewMetadataIsWhatFiltersMatch(t *testing.T) {
	t.Parallel()
	k := newKB(t, testdbs.SQLite(t), nil)
	alice := as("alice")
	res, err := k.Insert(alice, Content{Text: "The orbital period of Mars is 687 days.", Metadata: map[string]any{"topic": "space", "draft": true}})
	if err != nil {
		t.Fatal(err)
	}
	row := *res.Content
	row.Metadata = json.RawMessage(`{"topic": "astronomy", "year": 2024}`)
	if err := k.Update(alice, &row); err != nil {
		t.Fatal(err)
	}
	docs, err := k.Search(alice, "mars orbital period", map[string]any{"topic": "astronomy", "year": 2024}, 5)
	if err != nil {
		t.Fatal(err)
	}
	if len(docs) != 1 {
		t.Fatalf("a search by the content's new metadata found %d chunks, want 1", len(docs))
	}
	if m := docs[0].MetaData; m["draft"] != nil || m["chunk"] == nil || m["chunk_size"] == nil {
		t.Fatalf("hit metadata %v: want the new metadata and the chunk's own keys", m)
	}
	for _, old := range []map[string]any{{"topic": "space"}, {"draft": true}} {
		if docs, _ := k.Search(alice, "mars", old, 5); len(docs) != 0 {
			t.Fatalf("the replaced metadata %v still matches", old)
		}
	}
	// metadata cleared: no user key matches any more
	row.Metadata = nil
	if err := k.Update(alice, &row); err != nil {
		t.Fatal(err)
	}
	if docs, _ := k.Search(alice, "mars", map[string]any{"topic": "astronomy"}, 5); len(docs) != 0 {
		t.Fatalf("cleared metadata still matches: %+v", docs)
	}
}

// TestInsert_DerivedNamesAreCutTo255Characters: a name taken from a long
// URL or file name is cut to 255 characters on a rune boundary on every
// driver: MySQL's VARCHAR(255) holds it (its INSERT IGNORE would cut it
// silently), and elsewhere it is a name the content PATCH route accepts
// back (1 to 255 characters).
func TestInsert_DerivedNamesAreCutTo255Characters(t *testing.T) {
	t.Parallel()
	for name, open := range map[string]func(testing.TB) *db.DB{"mariadb": testdbs.MySQL, "postgres": testdbs.Postgres} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			derivedNamesFit(t, open(t))
		})
	}
}

func derivedNamesFit(t *testing.T, d *db.DB) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.Write([]byte("Neptune has a great dark spot."))
	}))
	defer srv.Close()
	k := newKB(t, d, func(c *Config) { c.Net.AllowNetworks = []string{"127.0.0.1/32"} })
	ctx := context.Background()
	longURL := srv.URL + "/" + strings.Repeat("a", 400)
	longFile := strings.Repeat("é", 300) + ".txt"
	for _, c := range []struct {
		content Content
		want    string
	}{
		{Content{URL: longURL}, longURL[:255]},
		{Content{Data: []byte("Uranus rolls on its side."), Filename: longFile, ContentType: "text/plain"}, strings.Repeat("é", 255)},
		{Content{Data: []byte("Venus turns backwards."), Filename: "short.txt"}, "short.txt"},
	} {
		res, err := k.Insert(ctx, c.content)
		if err != nil {
			t.Fatalf("insert %.40q: %v", c.want, err)
		}
		if res.Content.Name != c.want {
			t.Errorf("insert answered name %q, want %q", res.Content.Name, c.want)
		}
		row, err := k.Get(ctx, res.Content.ID)
		if err != nil || row.Name != c.want || row.Status != db.KnowledgeCompleted {
			t.Fatalf("stored %v %+v, want name %q", err, row, c.want)
		}
	}
}
