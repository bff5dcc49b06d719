package knowledge

import (
	"strings"
	"testing"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/dbtest/testdbs"
)

// A text with NUL bytes (a binary paste) is indexed without them on every
// driver: the name derived from its start kept them, and PostgreSQL refuses
// a NUL in text ("invalid byte sequence for encoding UTF8: 0x00"), so the
// insert failed before it had a row to say why; so did a description with one.
func TestInsert_TextWithNULBytesOnEveryDriver(t *testing.T) {
	testdbs.Each(t, func(t *testing.T, d *db.DB) {
		if _, ok := d.Driver().(db.KnowledgeDriver); !ok {
			return
		}
		k := newKB(t, d, nil)
		res, err := k.Insert(as("alice"), Content{Text: "Ceres\x00 is a dwarf\x00planet.", Description: "from a\x00 paste"})
		if err != nil {
			t.Fatal(err)
		}
		if c := res.Content; strings.Contains(c.Name+c.Description, "\x00") || c.Status != db.KnowledgeCompleted {
			t.Fatalf("row %q %q %s", c.Name, c.Description, c.Status)
		}
	})
}
