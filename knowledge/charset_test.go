package knowledge

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/db/dbtest/testdbs"
	"github.com/agentryhq/agentry/knowledge/reader"
	"github.com/agentryhq/agentry/vectordb"
)

// A document whose content type names a legacy charset (an old web page,
// a Windows text export) is decoded to UTF-8; it was refused as "not valid
// UTF-8 text". Bytes that are UTF-8 already stay as they are, whatever the
// label says.
func TestInsert_DeclaredCharsetIsDecoded(t *testing.T) {
	t.Parallel()
	k := newKB(t, testdbs.SQLite(t), nil)
	cases := []struct {
		data  []byte
		ctype string
	}{
		{[]byte("Caf\xe9 cr\xe8me, \x80 5"), "text/plain; charset=windows-1252"},
		{[]byte("<html><body><p>Caf\xe9 cr\xe8me</p></body></html>"), "text/html; charset=ISO-8859-1"},
		{[]byte("Café crème"), "text/plain; charset=iso-8859-1"},
		// An HTML page saying its charset in a meta element only (an upload,
		// or a server answering text/html with no charset or one nobody
		// knows): the page's own declaration, found as a browser finds it.
		// It was refused.
		{[]byte("<html><head><meta charset=\"windows-1252\"></head><body><p>Caf\xe9 cr\xe8me \x80</p></body></html>"), "text/html"},
		{[]byte("<html><head><meta http-equiv=\"Content-Type\" content=\"text/html; charset=iso-8859-1\"></head><body><p>Caf\xe9 cr\xe8me</p></body></html>"), "text/html; charset=no-such-charset"},
	}
	for i, c := range cases {
		res, err := k.Insert(as("alice"), Content{Data: c.data, Filename: "doc" + string(rune('a'+i)), ContentType: c.ctype})
		if err != nil {
			t.Fatalf("%q as %s: %v", c.data, c.ctype, err)
		}
		docs, err := k.Search(as("alice"), "café crème", map[string]any{"chunk": 1}, 10)
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, d := range docs {
			if d.ContentID == res.Content.ID {
				found = d.Content != "" && strings.Contains(d.Content, "Café crème")
			}
		}
		if !found {
			t.Fatalf("%q as %s: no chunk reads \"Café crème\": %+v", c.data, c.ctype, docs)
		}
	}
}

// A text file in UTF-16 with its byte order mark (Notepad's "Unicode",
// Excel's "Unicode Text") is decoded, whatever its label: it was refused
// as "not valid UTF-8 text".
func TestInsert_UTF16WithByteOrderMarkIsDecoded(t *testing.T) {
	t.Parallel()
	k := newKB(t, testdbs.SQLite(t), nil)
	utf16 := func(s string, big bool) []byte {
		out := []byte{0xFF, 0xFE}
		if big {
			out = []byte{0xFE, 0xFF}
		}
		for _, r := range s { // the test's text is in the BMP
			if big {
				out = append(out, byte(r>>8), byte(r))
			} else {
				out = append(out, byte(r), byte(r>>8))
			}
		}
		return out
	}
	for i, c := range []struct {
		data  []byte
		ctype string
	}{
		{utf16("region\tnote\nnorth\tCafé crème\n", false), "text/plain"},
		{utf16("Café crème in big-endian", true), ""},
		{utf16("<p>Café crème</p>", false), "text/html; charset=windows-1252"},
	} {
		res, err := k.Insert(context.Background(), Content{Data: c.data, Filename: fmt.Sprintf("export%d", i), ContentType: c.ctype})
		if err != nil {
			t.Fatalf("%d: %v", i, err)
		}
		docs, err := k.SearchQuery(context.Background(), Query{Text: "crème", Mode: vectordb.Keyword, Limit: 10})
		found := false
		for _, d := range docs {
			found = found || d.ContentID == res.Content.ID && strings.Contains(d.Content, "Café crème")
		}
		if err != nil || !found {
			t.Fatalf("%d: no chunk reads \"Café crème\": %v %+v", i, err, docs)
		}
	}
	// bytes after a mark that are not UTF-16 (an odd byte, a lone
	// surrogate) are refused as before, not read as replacement characters
	for _, data := range [][]byte{{0xFF, 0xFE, 0xFD}, {0xFF, 0xFE, 0x00, 0xD8, 0x41, 0x00}} {
		if _, err := k.Insert(context.Background(), Content{Data: data, Filename: "binary"}); !errors.Is(err, reader.ErrInvalidUTF8) {
			t.Fatalf("% x: %v", data, err)
		}
	}
}
