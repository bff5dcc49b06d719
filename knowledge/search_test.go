package knowledge

import (
	"errors"
	"testing"

	"github.com/agentryhq/agentry/db/dbtest/testdbs"
	"github.com/agentryhq/agentry/vectordb"
)

// A query of blanks has no text to search for: it is ErrEmptyQuery in
// every mode, as "" is (before, a keyword search answered nothing, and a
// vector or hybrid one embedded the blanks and answered with whatever lay
// nearest to nothing, or failed with the embeddings API's 400).
func TestSearch_BlankQueryIsEmpty(t *testing.T) {
	t.Parallel()
	k := newKB(t, testdbs.SQLite(t), nil)
	if _, err := k.Insert(as("alice"), Content{Text: "Venus spins backwards."}); err != nil {
		t.Fatal(err)
	}
	for _, mode := range []vectordb.Mode{vectordb.Vector, vectordb.Keyword, vectordb.Hybrid} {
		docs, err := k.SearchQuery(as("alice"), Query{Text: " \n\t", Mode: mode})
		if !errors.Is(err, ErrEmptyQuery) {
			t.Errorf("%s: %d hits, err %v; want ErrEmptyQuery", mode, len(docs), err)
		}
	}
}
