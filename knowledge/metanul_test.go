package knowledge

import (
	"errors"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/dbtest/testdbs"
)

// Metadata holding a NUL character is refused on every driver, saying so:
// SQLite and MySQL stored it, PostgreSQL's jsonb refused the row with
// "unsupported Unicode escape sequence".
func TestInsert_MetadataWithNULRefusedOnEveryDriver(t *testing.T) {
	testdbs.Each(t, func(t *testing.T, d *db.DB) {
		if _, ok := d.Driver().(db.KnowledgeDriver); !ok {
			return
		}
		k := newKB(t, d, nil)
		for _, meta := range []map[string]any{
			{"k": "a\x00b"},
			{"k\x00": 1},
			{"k": []any{map[string]any{"x": "\x00"}}},
		} {
			_, err := k.Insert(as("alice"), Content{Text: "Pallas", Metadata: meta})
			if !errors.Is(err, db.ErrInvalidRecord) || !strings.Contains(err.Error(), "NUL") {
				t.Fatalf("metadata %q: err %v, want ErrInvalidRecord naming the NUL", meta, err)
			}
		}
		rows, _, err := k.List(as("alice"), db.KnowledgeFilter{Limit: 10, Page: 1})
		if err != nil || len(rows) != 0 {
			t.Fatalf("rows %v %v", rows, err)
		}
	})
}

// So is an update's.
func TestUpdate_MetadataWithNULRefused(t *testing.T) {
	t.Parallel()
	k := newKB(t, testdbs.SQLite(t), nil)
	res, err := k.Insert(as("alice"), Content{Text: "Vesta"})
	if err != nil {
		t.Fatal(err)
	}
	c := *res.Content
	c.Metadata = []byte(`{"k":"a\u0000b"}`)
	if err := k.Update(as("alice"), &c); !errors.Is(err, db.ErrInvalidRecord) || !strings.Contains(err.Error(), "NUL") {
		t.Fatalf("err %v, want ErrInvalidRecord naming the NUL", err)
	}
}
