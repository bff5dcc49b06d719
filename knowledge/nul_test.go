package knowledge

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

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

// A file named in a legacy encoding (Latin-1 "café.txt" on Linux, a zip's
// CP437 names) is inserted under its name made UTF-8: no row could hold
// the name, so the file could not be inserted at all ("has text that is
// not UTF-8"). The same goes for an upload's file name and a URL.
func TestInsert_NameFromFileNotUTF8(t *testing.T) {
	t.Parallel()
	k := newKB(t, testdbs.SQLite(t), nil)
	path := filepath.Join(t.TempDir(), "caf\xe9.txt")
	if err := os.WriteFile(path, []byte("Ceres is a dwarf planet."), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []Content{{Path: path}, {Data: []byte("Vesta is an asteroid."), Filename: "r\xe9sum\xe9.txt"}} {
		res, err := k.Insert(context.Background(), c)
		if err != nil {
			t.Fatal(err)
		}
		if n := res.Content.Name; !utf8.ValidString(n) || !strings.HasSuffix(n, ".txt") || res.Content.Status != db.KnowledgeCompleted {
			t.Fatalf("row %q %s", n, res.Content.Status)
		}
	}
}
