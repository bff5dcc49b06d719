package knowledge

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/dbtest/testdbs"
)

// Two knowledge bases keeping their rows in one database's agno_knowledge
// (linked_to tells them apart, as in Agno) each see only their own: one
// listed, read, changed and deleted the other's, and its DeleteAll emptied
// both tables of rows while the other's chunks stayed searchable.
func TestKnowledgeBasesSharingADatabase(t *testing.T) {
	testdbs.Each(t, func(t *testing.T, d *db.DB) {
		if _, ok := d.Driver().(db.KnowledgeDriver); !ok {
			return // the in-memory driver stores no knowledge (TestInsertAndSearch_EveryDriver)
		}
		a := newKB(t, d, func(c *Config) { c.Name = "a" })
		b := newKB(t, d, func(c *Config) { c.Name = "b" })
		ctx := context.Background()
		var ofA []string
		for i := range 3 {
			res, err := a.Insert(ctx, Content{Text: fmt.Sprintf("Walruses sleep on ice floe %d.", i)})
			if err != nil {
				t.Fatal(err)
			}
			ofA = append(ofA, res.Content.ID)
		}
		for i := range 2 {
			if _, err := b.Insert(ctx, Content{Text: fmt.Sprintf("Penguins nest on rock %d.", i)}); err != nil {
				t.Fatal(err)
			}
		}
		for kb, want := range map[*Knowledge]int{a: 3, b: 2} {
			rows, total, err := kb.List(ctx, db.KnowledgeFilter{Limit: 2, Page: 2})
			if err != nil || total != want || len(rows) != want-2 {
				t.Fatalf("%s: page 2 of 2 a page: %v, total %d, %d rows", kb.Name(), err, total, len(rows))
			}
			for _, r := range rows {
				if r.LinkedTo != kb.Name() {
					t.Fatalf("%s lists %s's row %s", kb.Name(), r.LinkedTo, r.ID)
				}
			}
		}
		if _, err := b.Get(ctx, ofA[0]); !errors.Is(err, db.ErrNotFound) {
			t.Fatalf("b reads a's row: %v", err)
		}
		if err := b.Update(ctx, &db.KnowledgeContent{ID: ofA[0], Name: "renamed by b"}); !errors.Is(err, db.ErrNotFound) {
			t.Fatalf("b changes a's row: %v", err)
		}
		if err := b.Delete(ctx, ofA[0]); !errors.Is(err, db.ErrNotFound) {
			t.Fatalf("b deletes a's row: %v", err)
		}
		if err := b.DeleteAll(ctx); err != nil {
			t.Fatal(err)
		}
		if _, total, _ := b.List(ctx, db.KnowledgeFilter{Limit: 10, Page: 1}); total != 0 {
			t.Fatalf("b keeps %d rows after DeleteAll", total)
		}
		rows, total, err := a.List(ctx, db.KnowledgeFilter{Limit: 10, Page: 1})
		if err != nil || total != 3 || len(rows) != 3 {
			t.Fatalf("a after b's DeleteAll: %v, total %d", err, total)
		}
		if c, err := a.Get(ctx, ofA[0]); err != nil || c.Name == "renamed by b" {
			t.Fatalf("a's row: %+v %v", c, err)
		}
		if docs, err := a.Search(ctx, "walruses", nil, 5); err != nil || len(docs) != 3 {
			t.Fatalf("a's search: %d hits, %v", len(docs), err)
		}
	})
}
