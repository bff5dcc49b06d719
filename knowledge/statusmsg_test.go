package knowledge

import (
	"context"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/dbtest/testdbs"
	"github.com/agentryhq/agentry/embedder"
)

// failingEmbedder fails every Embed with err.
type failingEmbedder struct {
	embedder.Embedder
	err error
}

func (f failingEmbedder) Embed(context.Context, []string) ([][]float32, error) { return nil, f.err }

// An insert that fails with an error quoting what it failed on (bytes that
// are not UTF-8, a NUL, an embeddings API's whole answer) ends FAILED with a
// status message every database stores: the FAILED row could not be
// written, and the row stayed "processing" for good.
func TestInsert_FailureWithAnyErrorTextEndsFailed(t *testing.T) {
	testdbs.Each(t, func(t *testing.T, d *db.DB) {
		if _, ok := d.Driver().(db.KnowledgeDriver); !ok {
			return // the in-memory driver stores no knowledge (TestInsertAndSearch_EveryDriver)
		}
		for name, text := range map[string]string{
			"not UTF-8": "embeddings API answered \xb0\xff",
			"NUL":       "embeddings API answered a\x00b",
			"70 KB":     "embeddings API answered " + strings.Repeat("<html>", 12000),
		} {
			t.Run(name, func(t *testing.T) {
				cause := errors.New(text)
				k := newKB(t, d, func(c *Config) { c.Embedder = failingEmbedder{Embedder: c.Embedder, err: cause} })
				res, err := k.Insert(context.Background(), Content{Text: "walruses " + name})
				if !errors.Is(err, cause) || errors.Is(err, db.ErrInvalidRecord) {
					t.Fatalf("err %q", err)
				}
				c, err := k.Get(context.Background(), res.Content.ID)
				if err != nil || c.Status != db.KnowledgeFailed || !strings.HasPrefix(c.StatusMessage, "knowledge: embedding: embeddings API answered") ||
					!utf8.ValidString(c.StatusMessage) || len(c.StatusMessage) > maxStatusMessage {
					t.Fatalf("row %q, %d bytes of message, %v", c.Status, len(c.StatusMessage), err)
				}
			})
		}
	})
}
