package knowledge

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"go.opentelemetry.io/otel/attribute"

	"github.com/agentryhq/agentry/internal/otelspan"
	"github.com/agentryhq/agentry/vectordb"
)

// Document is one search hit in Agno's Document shape (to_dict gives name,
// meta_data and content; the HTTP search adds id and content_id).
type Document struct {
	ID        string         `json:"id,omitempty"`
	Content   string         `json:"content"`
	Name      string         `json:"name,omitempty"`
	MetaData  map[string]any `json:"meta_data,omitempty"`
	ContentID string         `json:"content_id,omitempty"`
	Score     float64        `json:"-"`
	UserID    string         `json:"-"`
}

// Reference is the dict a run's references list holds (Agno's
// Document.to_dict: name, meta_data, content).
func (d Document) Reference() map[string]any {
	out := map[string]any{"content": d.Content}
	if d.Name != "" {
		out["name"] = d.Name
	}
	if d.MetaData != nil {
		out["meta_data"] = d.MetaData
	}
	return out
}

// Query is a search with all its options.
type Query struct {
	Text    string
	Filters map[string]any
	// Limit defaults to 10.
	Limit int
	// Mode defaults to the knowledge base's SearchMode.
	Mode vectordb.Mode
}

// ErrEmptyQuery: a search without text (or only blanks).
var ErrEmptyQuery = errors.New("knowledge: the search query is empty")

// Search finds the chunks most relevant to query under the caller's scope
// (the user's own content and shared content).
func (k *Knowledge) Search(ctx context.Context, query string, filters map[string]any, limit int) ([]Document, error) {
	return k.SearchQuery(ctx, Query{Text: query, Filters: filters, Limit: limit})
}

// SearchQuery is Search with a mode.
func (k *Knowledge) SearchQuery(ctx context.Context, q Query) (docs []Document, err error) {
	ctx, span := otelspan.Start(ctx, "retrieval", "retrieval")
	if span != nil {
		defer func() {
			span.SetAttributes(attribute.String("agentry.retrieval.mode", string(q.Mode)), attribute.Int("agentry.retrieval.limit", q.Limit),
				attribute.Int("agentry.retrieval.documents", len(docs)))
			otelspan.End(span, err)
		}()
	}
	if strings.TrimSpace(q.Text) == "" {
		return nil, ErrEmptyQuery
	}
	if q.Limit <= 0 {
		q.Limit = DefaultSearchLimit
	}
	if q.Mode == "" {
		q.Mode = k.cfg.SearchMode
	}
	vq := vectordb.Query{Mode: q.Mode, Text: q.Text, Limit: q.Limit, Filters: q.Filters}
	if q.Mode != vectordb.Keyword {
		v, err := k.cfg.Embedder.Embed(ctx, []string{q.Text})
		if err != nil {
			return nil, fmt.Errorf("knowledge: embedding the query: %w", err)
		}
		if len(v) != 1 {
			return nil, fmt.Errorf("knowledge: embedding the query: got %d vectors", len(v))
		}
		vq.Vector = v[0]
	}
	hits, err := k.cfg.Vectors.Search(ctx, vq)
	if err != nil {
		return nil, err
	}
	if k.cfg.Reranker != nil {
		if hits, err = k.cfg.Reranker.Rerank(ctx, q.Text, hits); err != nil {
			return nil, fmt.Errorf("knowledge: reranking: %w", err)
		}
	}
	out := make([]Document, len(hits))
	for i, h := range hits {
		out[i] = Document{ID: h.ID, Content: h.Content, Name: h.Name, MetaData: h.Metadata, ContentID: h.ContentID, Score: h.Score, UserID: h.UserID}
	}
	return out, nil
}
