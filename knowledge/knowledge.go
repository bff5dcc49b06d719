package knowledge

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/embedder"
	"github.com/agentryhq/agentry/knowledge/chunk"
	"github.com/agentryhq/agentry/tool/netguard"
	"github.com/agentryhq/agentry/vectordb"
)

// Defaults for Config's zero values.
const (
	DefaultMaxBytes     = 50 << 20
	DefaultFetchTimeout = 30 * time.Second
	DefaultAsyncTimeout = 30 * time.Minute
	DefaultSearchLimit  = 10
)

// Sentinel errors of inserts; a FAILED row's status_message carries the
// error text.
var (
	ErrTooLarge  = errors.New("knowledge: content is larger than the size cap")
	ErrFetch     = errors.New("knowledge: fetching the URL failed")
	ErrNoSource  = errors.New("knowledge: content needs exactly one of text, path, url or data")
	ErrNoVectors = errors.New("knowledge: no vector store is configured")
	// ErrContentDeleted: the content was deleted while it was being
	// inserted; nothing of it stays.
	ErrContentDeleted = errors.New("knowledge: the content was deleted while it was being inserted")
)

// Config configures a knowledge base. DB, Vectors and Embedder are required.
type Config struct {
	// Name is the knowledge base's name (agno_knowledge.linked_to).
	Name        string
	Description string
	// DB stores the content rows (agno_knowledge).
	DB       *db.DB
	Vectors  vectordb.Store
	Embedder embedder.Embedder
	// Chunker splits text when the content names none; default
	// chunk.Recursive{Size: 1000} (chunk.Markdown for Markdown documents).
	Chunker chunk.Chunker
	// MaxBytes caps one document (file, upload or URL body); default 50 MB.
	MaxBytes int64
	// FetchTimeout bounds fetching one URL; default 30 s.
	FetchTimeout time.Duration
	// Net says which non-public addresses URL content may come from; the
	// zero value allows public addresses only.
	Net netguard.Config
	// SearchMode is the default search type; default hybrid.
	SearchMode vectordb.Mode
	// Reranker, when set, reorders search hits.
	Reranker vectordb.Reranker
	Logger   *slog.Logger
}

// Knowledge is a knowledge base. Safe for concurrent use.
type Knowledge struct {
	cfg   Config
	guard *netguard.Guard
	async sync.WaitGroup
	busy  keyedLock // per content id: one insert at a time indexes it
	// edits serialises, per content id, the writes of a row's metadata
	// and then its chunks' (Update, an insert's outcome): interleaved, the
	// chunks could keep the metadata of an earlier write than the row's.
	// Not busy: an Update must not wait for a whole insert.
	edits keyedLock
}

// New checks cfg and returns the knowledge base.
func New(cfg Config) (*Knowledge, error) {
	if cfg.DB == nil {
		return nil, errors.New("knowledge: Config.DB is required (content rows go to agno_knowledge)")
	}
	if _, ok := cfg.DB.Driver().(db.KnowledgeDriver); !ok {
		return nil, db.ErrNoKnowledge
	}
	if cfg.Vectors == nil {
		return nil, ErrNoVectors
	}
	if cfg.Embedder == nil {
		return nil, errors.New("knowledge: Config.Embedder is required")
	}
	// a store that says its vector length: a mismatch fails here, not
	// after a first insert embedded a whole document
	if v, ok := cfg.Vectors.(interface{ Dimensions() int }); ok && v.Dimensions() != cfg.Embedder.Dimensions() {
		return nil, fmt.Errorf("knowledge: %w: the embedder %s makes %d-dimension vectors, the store holds %d",
			vectordb.ErrEmbedderMismatch, cfg.Embedder.ID(), cfg.Embedder.Dimensions(), v.Dimensions())
	}
	if cfg.MaxBytes <= 0 {
		cfg.MaxBytes = DefaultMaxBytes
	}
	if cfg.FetchTimeout <= 0 {
		cfg.FetchTimeout = DefaultFetchTimeout
	}
	if cfg.SearchMode == "" {
		cfg.SearchMode = vectordb.Hybrid
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	g, err := netguard.New(cfg.Net)
	if err != nil {
		return nil, fmt.Errorf("knowledge: %w", err)
	}
	return &Knowledge{cfg: cfg, guard: g}, nil
}

// Name returns the knowledge base's name.
func (k *Knowledge) Name() string { return k.cfg.Name }

// Config returns the configuration (after defaults).
func (k *Knowledge) Config() Config { return k.cfg }

// Wait blocks until every InsertAsync started so far has finished.
func (k *Knowledge) Wait() { k.async.Wait() }

// Get returns a content row of this knowledge base the caller can see.
func (k *Knowledge) Get(ctx context.Context, id string) (*db.KnowledgeContent, error) {
	c, err := k.cfg.DB.GetKnowledgeContent(ctx, id)
	if err != nil {
		return nil, err
	}
	if !k.holds(c) {
		return nil, fmt.Errorf("%w: knowledge content %s (it belongs to knowledge base %q)", db.ErrNotFound, id, c.LinkedTo)
	}
	return c, nil
}

// holds says whether a content row is this knowledge base's: several
// knowledge bases may keep their rows in one database's agno_knowledge,
// told apart by linked_to, as Agno tells them (a knowledge base without a
// name sees every row, as Agno's).
func (k *Knowledge) holds(c *db.KnowledgeContent) bool {
	return k.cfg.Name == "" || c.LinkedTo == k.cfg.Name
}

// listPage is how many rows DeleteAll reads at a time.
const listPage = 500

// List pages the content rows of this knowledge base the caller can see.
func (k *Knowledge) List(ctx context.Context, f db.KnowledgeFilter) ([]db.KnowledgeContent, int, error) {
	f.LinkedTo = k.cfg.Name
	return k.cfg.DB.ListKnowledgeContents(ctx, f)
}

// Update rewrites a content row's name, description and metadata (shared
// rows: admins only, db.ErrForbidden otherwise); c's other fields are not
// written, and c becomes the row as written. The content's chunks take
// the new metadata (keeping their own chunk keys), so search filters match
// what the row now says, as Agno's patch_content does.
func (k *Knowledge) Update(ctx context.Context, c *db.KnowledgeContent) error {
	var meta map[string]any
	if raw := bytes.TrimSpace(c.Metadata); len(raw) > 0 {
		if err := json.Unmarshal(raw, &meta); err != nil {
			return fmt.Errorf("%w: knowledge content %s metadata must be a JSON object: %v", db.ErrInvalidRecord, c.ID, err)
		}
		if err := checkNoNUL(map[string]any(meta)); err != nil {
			return err
		}
	}
	defer k.edits.lock(c.ID, nil)()
	// only the three fields change, on the row as it is now: the rest of
	// c is what the caller read, maybe while the content was processing,
	// and an insert ending meanwhile left the row COMPLETED with its size
	// and type; written back, the row said "processing" for good
	cur, err := k.Get(ctx, c.ID)
	if err != nil {
		return err
	}
	cur.Name, cur.Description, cur.Metadata = c.Name, c.Description, c.Metadata
	if err := k.cfg.DB.UpdateKnowledgeContent(ctx, cur); err != nil {
		return err
	}
	*c = *cur
	if err := k.cfg.Vectors.UpdateMetadata(ctx, c.ID, meta, chunkKeys...); err != nil {
		return fmt.Errorf("knowledge: content %s: updating its chunks' metadata: %w", c.ID, err)
	}
	return nil
}

// Delete removes a content row and its vectors, stopping an insert of the
// content in progress in this process (one elsewhere drops its vectors when
// it finds the row gone). A scoped caller deleting
// shared content gets db.ErrForbidden; another user's, db.ErrNotFound.
func (k *Knowledge) Delete(ctx context.Context, id string) error {
	c, err := k.Get(ctx, id)
	if err != nil {
		return err
	}
	if _, scoped := db.UserScope(ctx); scoped && c.UserID == "" {
		return fmt.Errorf("%w: knowledge content %s is shared; only an admin can delete it", db.ErrForbidden, id)
	}
	// an insert of the content in progress would write its chunks after
	// the vectors are deleted: stop it and wait for it to return
	k.busy.cancel(id, ErrContentDeleted)
	defer k.busy.lock(id, nil)()
	if err := k.cfg.Vectors.DeleteContent(ctx, id); err != nil {
		return err
	}
	return k.cfg.DB.DeleteKnowledgeContent(ctx, id)
}

// DeleteAll deletes every content row of this knowledge base the caller
// may delete (its own, or all of them for an admin) and their vectors.
func (k *Knowledge) DeleteAll(ctx context.Context) error {
	_, scoped := db.UserScope(ctx)
	gone := map[string]bool{}
	for page := 1; ; {
		rows, _, err := k.cfg.DB.ListKnowledgeContents(ctx, db.KnowledgeFilter{Limit: listPage, Page: page, LinkedTo: k.cfg.Name})
		if err != nil {
			return err
		}
		if len(rows) == 0 {
			return nil
		}
		deleted := 0
		for _, c := range rows {
			if scoped && c.UserID == "" {
				continue // shared content stays; on this page until the end
			}
			// one deleted since the listing (another replica's Delete, a
			// second DeleteAll) is gone as asked: go on to the rest; listed
			// again, it is not gone, and looping on it would never end
			if err := k.Delete(ctx, c.ID); err != nil {
				if !errors.Is(err, db.ErrNotFound) || gone[c.ID] {
					return err
				}
				gone[c.ID] = true
			}
			deleted++
		}
		if deleted == 0 {
			page++
		}
	}
}
