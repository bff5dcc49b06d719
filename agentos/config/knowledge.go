package config

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/embedder"
	"github.com/agentryhq/agentry/embedder/local"
	"github.com/agentryhq/agentry/embedder/openai"
	"github.com/agentryhq/agentry/knowledge"
	"github.com/agentryhq/agentry/tool/netguard"
	"github.com/agentryhq/agentry/vectordb"
	"github.com/agentryhq/agentry/vectordb/embedded"
	"github.com/agentryhq/agentry/vectordb/pgvector"
)

// Knowledge declares the server's knowledge base. Absent, `agentry serve`
// and `agentry knowledge` use a default one: the local hashing embedder and
// the embedded vector store under DATA_DIR/knowledge, with hybrid search.
type Knowledge struct {
	// Name names the knowledge base (knowledge_id in the routes); default "knowledge".
	Name        string `yaml:"name"`
	Description string `yaml:"description"`
	// Embedder: absent or {provider: local} is the offline hashing embedder
	// (not semantic); {provider: openai, model, dimensions, base_url,
	// api_key} any OpenAI-compatible embeddings API (Ollama, vLLM, LM Studio).
	Embedder *EmbedderConfig `yaml:"embedder"`
	// VectorDB: absent or {type: embedded, path} is the embedded store
	// (path default DATA_DIR/knowledge/NAME.vectors.db).
	VectorDB *VectorDBConfig `yaml:"vector_db"`
	// MaxBytes caps one document; default 50MB.
	MaxBytes ByteSize `yaml:"max_bytes"`
	// FetchTimeout bounds a URL fetch, in seconds; default 30.
	FetchTimeout float64 `yaml:"fetch_timeout"`
	// AllowNetworks lets URL content come from these non-public networks
	// (CIDR), e.g. an intranet wiki.
	AllowNetworks []string `yaml:"allow_networks"`
	// SearchType is vector, keyword or hybrid (default).
	SearchType string `yaml:"search_type"`
}

// EmbedderConfig chooses the embedder.
type EmbedderConfig struct {
	Provider   string `yaml:"provider"`
	Model      string `yaml:"model"`
	Dimensions int    `yaml:"dimensions"`
	BaseURL    string `yaml:"base_url"`
	APIKey     string `yaml:"api_key"`
	BatchSize  int    `yaml:"batch_size"`
	// SendDimensions sends dimensions with each request (provider openai),
	// for models that shorten their vectors to it; unset, it is sent to
	// text-embedding-3 models only, as Agno's OpenAIEmbedder does.
	SendDimensions *bool `yaml:"send_dimensions"`
}

// sendDimensions resolves SendDimensions.
func (e *EmbedderConfig) sendDimensions() bool {
	if e.SendDimensions != nil {
		return *e.SendDimensions
	}
	return strings.HasPrefix(e.Model, "text-embedding-3")
}

// VectorDBConfig chooses the vector store: embedded (Path) or pgvector
// (DSN, default the server's own Postgres database; Schema default "ai";
// Table default "agno_vectors").
type VectorDBConfig struct {
	Type   string `yaml:"type"`
	Path   string `yaml:"path"`
	DSN    string `yaml:"dsn"`
	Schema string `yaml:"schema"`
	Table  string `yaml:"table"`
}

var kbName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// Validate checks the declaration without opening anything.
func (k *Knowledge) Validate() error {
	if k == nil {
		return nil
	}
	if k.Name != "" && !kbName.MatchString(k.Name) {
		return fmt.Errorf("knowledge.name %q: use letters, digits, _ and -", k.Name)
	}
	if e := k.Embedder; e != nil {
		switch e.Provider {
		case "", "local":
			if e.Model != "" || e.BaseURL != "" || e.APIKey != "" || e.SendDimensions != nil {
				return errors.New("knowledge.embedder: the local embedder takes only dimensions")
			}
			if e.Dimensions < 0 || e.Dimensions > local.MaxDimensions {
				return fmt.Errorf("knowledge.embedder.dimensions %d: the local embedder takes 1 to %d (0: %d)", e.Dimensions, local.MaxDimensions, local.DefaultDimensions)
			}
		case "openai":
			if e.Model == "" || e.Dimensions <= 0 {
				return errors.New("knowledge.embedder: provider openai needs model and dimensions (e.g. text-embedding-3-small, 1536)")
			}
		default:
			return fmt.Errorf("knowledge.embedder.provider %q: use local or openai (OpenAI-compatible servers: set base_url)", e.Provider)
		}
	}
	if v := k.VectorDB; v != nil {
		switch v.Type {
		case "", "embedded":
			if v.DSN != "" || v.Schema != "" || v.Table != "" {
				return errors.New("knowledge.vector_db: the embedded store takes only path")
			}
		case "pgvector":
			if v.Path != "" {
				return errors.New("knowledge.vector_db: pgvector takes dsn, schema and table, not path")
			}
		default:
			return fmt.Errorf("knowledge.vector_db.type %q: use embedded or pgvector", v.Type)
		}
	}
	switch vectordb.Mode(k.SearchType) {
	case "", vectordb.Vector, vectordb.Keyword, vectordb.Hybrid:
	default:
		return fmt.Errorf("knowledge.search_type %q: use vector, keyword or hybrid", k.SearchType)
	}
	if k.FetchTimeout < 0 || k.MaxBytes < 0 {
		return errors.New("knowledge: fetch_timeout and max_bytes must not be negative")
	}
	if !durationOK(k.FetchTimeout, time.Second) {
		return fmt.Errorf("knowledge.fetch_timeout %v: use a number of seconds from 0 to %d", k.FetchTimeout, int64(math.MaxInt64/time.Second))
	}
	if _, err := netguard.New(netguard.Config{AllowNetworks: k.AllowNetworks}); err != nil {
		return fmt.Errorf("knowledge.allow_networks: %w", err)
	}
	return nil
}

// Defaulted reports whether the declaration takes the offline defaults
// (local embedder, embedded store), which the CLI and serve announce.
func (k *Knowledge) Defaulted() bool {
	return k == nil || k.Embedder == nil || k.Embedder.Provider == "" || k.Embedder.Provider == "local"
}

// openVectors opens the declared vector store; where names it for the log.
func openVectors(ctx context.Context, v *VectorDBConfig, d *db.DB, dataDir, name string, emb embedder.Embedder) (vectordb.Store, string, error) {
	if v != nil && v.Type == "pgvector" {
		cfg := pgvector.Config{DSN: v.DSN, Schema: v.Schema, Table: v.Table, Dimensions: emb.Dimensions()}
		var release func()
		if cfg.DSN == "" {
			sb, ok := d.Driver().(db.SQLBacked)
			if !ok || d.Driver().Dialect() != "postgres" {
				return nil, "", errors.New("knowledge.vector_db: pgvector needs dsn, or the server's database on Postgres")
			}
			t, err := sb.SQLTarget()
			if err != nil {
				return nil, "", err
			}
			cfg.DB, release = t.DB, t.Release
		}
		s, err := pgvector.Open(ctx, cfg)
		if err != nil {
			if release != nil {
				release()
			}
			return nil, "", fmt.Errorf("knowledge.vector_db (pgvector): %w", err)
		}
		if release != nil {
			return releasing{s, release}, "pgvector", nil
		}
		return s, "pgvector", nil
	}
	path := ""
	if v != nil {
		path = v.Path
	}
	if path == "" {
		dir := filepath.Join(dataDir, "knowledge")
		if err := os.MkdirAll(dir, 0o750); err != nil {
			return nil, "", fmt.Errorf("knowledge: %w", err)
		}
		path = filepath.Join(dir, name+".vectors.db")
	}
	s, err := embedded.Open(ctx, embedded.Config{Path: path, Dimensions: emb.Dimensions(), EmbedderID: emb.ID(), Logger: slog.Default()})
	return s, path, err
}

// releasing gives a borrowed pool back when the store closes.
type releasing struct {
	*pgvector.Store
	release func()
}

func (r releasing) Close() error {
	err := r.Store.Close()
	r.release()
	return err
}

// OpenKnowledge builds the knowledge base k declares (nil: the default) on
// d, its embedded vectors under dataDir. The returned close function saves
// and closes the vector store.
func OpenKnowledge(ctx context.Context, k *Knowledge, d *db.DB, dataDir string, log *slog.Logger) (*knowledge.Knowledge, func() error, error) {
	if k == nil {
		k = &Knowledge{}
	}
	if err := k.Validate(); err != nil {
		return nil, nil, err
	}
	name := k.Name
	if name == "" {
		name = "knowledge"
	}
	var emb embedder.Embedder
	if e := k.Embedder; e != nil && e.Provider == "openai" {
		oe, err := openai.New(openai.Config{BaseURL: e.BaseURL, APIKey: os.ExpandEnv(e.APIKey), Model: e.Model, Dimensions: e.Dimensions,
			SendDimensions: e.sendDimensions(), BatchSize: e.BatchSize})
		if err != nil {
			return nil, nil, err
		}
		emb = oe
	} else {
		dims := 0
		if e != nil {
			dims = e.Dimensions
		}
		emb = local.New(local.Config{Dimensions: dims})
	}
	vs, path, err := openVectors(ctx, k.VectorDB, d, dataDir, name, emb)
	if err != nil {
		return nil, nil, err
	}
	kb, err := knowledge.New(knowledge.Config{Name: name, Description: k.Description, DB: d, Vectors: vs, Embedder: emb,
		MaxBytes: int64(k.MaxBytes), FetchTimeout: time.Duration(k.FetchTimeout * float64(time.Second)),
		Net: netguard.Config{AllowNetworks: k.AllowNetworks}, SearchMode: vectordb.Mode(k.SearchType), Logger: log})
	if err != nil {
		vs.Close()
		return nil, nil, err
	}
	if k.Defaulted() {
		log.Info("knowledge: no embedder configured: using the local hashing embedder (keyword-like, not semantic) and the embedded vector store with hybrid search",
			"vectors", path)
	}
	return kb, vs.Close, nil
}
