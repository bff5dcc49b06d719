package reader

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
)

// xrefStreamPDF writes a PDF whose cross-reference is a stream (object 6)
// and whose catalog (object 1) sits in object stream 5. header is object
// 5's stream header ("1 0" finds the catalog), dict5 its extra entries,
// xrefDict the cross-reference stream's extra entries, in5 puts object 5
// in itself.
func xrefStreamPDF(header, dict5, xrefDict string, in5 bool) []byte {
	catalog := "<< /Type /Catalog /Pages 2 0 R >>"
	body := header + " " + catalog
	plain := []string{
		"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
		"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R >>",
		pdfStream("BT (from an object stream) Tj ET"),
		fmt.Sprintf("<< /Type /ObjStm /First %d /Length %d %s >>\nstream\n%s\nendstream", len(header)+1, len(body), dict5, body),
	}
	var b bytes.Buffer
	b.WriteString("%PDF-1.5\n")
	offsets := make([]int, len(plain))
	for i, o := range plain {
		offsets[i] = b.Len()
		fmt.Fprintf(&b, "%d 0 obj\n%s\nendobj\n", i+2, o)
	}
	// W [1 4 2]: type, offset or stream, generation or index
	var rows bytes.Buffer
	row := func(kind byte, f2 uint32, f3 uint16) {
		rows.WriteByte(kind)
		_ = binary.Write(&rows, binary.BigEndian, f2)
		_ = binary.Write(&rows, binary.BigEndian, f3)
	}
	row(0, 0, 65535)
	row(2, 5, 0) // the catalog: object stream 5, index 0
	for i, off := range offsets {
		if i == 3 && in5 {
			row(2, 5, 1)
			continue
		}
		row(1, uint32(off), 0)
	}
	xref := b.Len()
	row(1, uint32(xref), 0)
	fmt.Fprintf(&b, "6 0 obj\n<< /Type /XRef /Size 7 /W [1 4 2] /Root 1 0 R /Length %d %s >>\nstream\n", rows.Len(), xrefDict)
	b.Write(rows.Bytes())
	fmt.Fprintf(&b, "\nendstream\nendobj\nstartxref\n%d\n%%%%EOF\n", xref)
	return b.Bytes()
}

// A PDF's cross-reference sections and object streams are numbers the PDF
// library trusts: a Prev naming its own section looped forever, an entry
// numbered in the billions or a Size as large allocated a table of that
// many entries (a fatal out of memory: a 450-byte upload ended the
// process), an object stream's N of 2^62 looped as many times, one
// extending itself looped forever, one holding itself recursed until the
// stack overflowed (fatal), a predictor's Columns of 2^40 allocated that
// much. Each is ErrMalformed now, and the same structures written sanely
// are read.
func TestReadPDF_CrossReferenceAndObjectStreamsBounded(t *testing.T) {
	t.Parallel()
	// a table whose trailer carries extra entries, and subsections
	table := func(subsections, trailer string) []byte {
		good := minimalPDF("tabled")
		i := bytes.LastIndex(good, []byte("trailer"))
		xref := bytes.LastIndex(good, []byte("xref\n0 6"))
		out := append([]byte{}, good[:i]...)
		out = append(out, subsections...)
		out = append(out, bytes.Replace(good[i:], []byte("/Root 1 0 R"), []byte("/Root 1 0 R "+strings.ReplaceAll(trailer, "XREF", fmt.Sprint(xref))), 1)...)
		return out
	}
	// a Flate content stream with the PNG Up predictor over 4 columns
	content := func(columns string) []byte {
		s := "BT (columns) Tj ET  " // 20 bytes: 5 rows
		var rows bytes.Buffer
		prev := make([]byte, 4)
		for i := 0; i < len(s); i += 4 {
			rows.WriteByte(2)
			for j := range 4 {
				rows.WriteByte(s[i+j] - prev[j])
			}
			copy(prev, s[i:i+4])
		}
		var z bytes.Buffer
		w := zlib.NewWriter(&z)
		_, _ = w.Write(rows.Bytes())
		_ = w.Close()
		return pdfOf(
			"<< /Type /Catalog /Pages 2 0 R >>",
			"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
			"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R >>",
			fmt.Sprintf("<< /Length %d /Filter /FlateDecode /DecodeParms << /Predictor 12 /Columns %s >> >>\nstream\n%s\nendstream", z.Len(), columns, z.Bytes()),
		)
	}
	for name, c := range map[string]struct {
		pdf  []byte
		text string // "" for ErrMalformed
	}{
		"table":                        {table("", ""), "tabled"},
		"table, Prev to itself":        {table("", "/Prev XREF"), ""},
		"table, object 4,000,000,000":  {table("4000000000 1\n0000000010 00000 n \n", ""), ""},
		"xref stream":                  {xrefStreamPDF("1 0", "/N 1", "", false), "from an object stream"},
		"xref stream, Prev to itself":  {xrefStreamPDF("1 0", "/N 1", "/Prev XREF", false), ""},
		"xref stream, Size 2^40":       {xrefStreamPDF("1 0", "/N 1", "/Size 1099511627776", false), ""},
		"xref stream, W of 2^40":       {xrefStreamPDF("1 0", "/N 1", "/W [1 1099511627776 2]", false), ""},
		"xref stream, empty W":         {xrefStreamPDF("1 0", "/N 1", "/W [0 0 0] /Index [1 4000000000]", false), ""},
		"object stream, N 2^62":        {xrefStreamPDF("7 0", "/N 4611686018427387904", "", false), ""},
		"object stream extending self": {xrefStreamPDF("7 0", "/N 1 /Extends 5 0 R", "", false), ""},
		"object stream in itself":      {xrefStreamPDF("1 0", "/N 1", "", true), ""},
		"predictor columns":            {content("4"), "columns"},
		"predictor columns 2^40":       {content("1099511627776"), ""},
	} {
		data := c.pdf
		if i := bytes.Index(data, []byte("/Prev XREF")); i >= 0 && bytes.HasPrefix(data, []byte("%PDF-1.5")) {
			xref := bytes.LastIndex(data, []byte("6 0 obj"))
			data = bytes.Replace(data, []byte("/Prev XREF"), fmt.Appendf(nil, "/Prev %-4d", xref), 1)
		}
		text, err := Read(PDF, data)
		switch {
		case c.text != "" && (err != nil || !strings.Contains(text, c.text)):
			t.Errorf("%s: %q, %v", name, text, err)
		case c.text == "" && !errors.Is(err, ErrMalformed):
			t.Errorf("%s: %q, %v; want ErrMalformed", name, text, err)
		}
	}
}

// The operands a page's content streams, a form's or a CMap's leave on the
// PDF library's stack at once are bounded: it keeps each, so 12 MB of
// "[1 2] " before one operator, compressed in a 19 KB PDF, took 400 MB.
// A dictionary's definitions, split content streams, and tokens the
// library stops inside (a bad hex digit, escape or name) do not hide them.
func TestReadPDF_OperandsBounded(t *testing.T) {
	many := strings.Repeat("[1 2] ", 2<<20)
	for name, content := range map[string]string{
		"operands":          many + "Tj",
		"defined operators": "<< >> begin /Tj 1 def " + strings.Repeat("Tj ", 3<<20),
		// in an array: the library drops the array and reads on
		"bad hex digit":       "[<1z " + many + "> Tj",
		"bad escape":          `[(\q ` + many + ") Tj",
		"bad name":            "[/a#(" + many + ") Tj",
		"unknown operators":   strings.Repeat("1 2 x ", 2<<20) + "Tj",
		"streams cut a token": "",
	} {
		data := flatePDF(content)
		if name == "streams cut a token" {
			// the library joins a page's streams: "Tj" + "x" is no Tj
			var parts []string
			for range 40 {
				parts = append(parts, flateStream(strings.Repeat("1 ", 100_000)+"Tj"), flateStream("x "))
			}
			objs := []string{
				"<< /Type /Catalog /Pages 2 0 R >>",
				"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
				"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents [" + refs(5, len(parts)) + "] >>",
				"<< >>",
			}
			data = pdfOf(append(objs, parts...)...)
		}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, err := Read(PDF, data)
		runtime.ReadMemStats(&after)
		if alloc := after.TotalAlloc - before.TotalAlloc; !errors.Is(err, ErrMalformed) || alloc > 128<<20 {
			t.Errorf("%s: %d MB allocated, err %v", name, alloc>>20, err)
		}
	}
	// the operands of one operator, many on a page, are read
	if text, err := Read(PDF, flatePDF("BT /F1 12 Tf "+strings.Repeat("[(a) 1 (b) 2 (c)] TJ ", 100_000)+"ET")); err != nil || len(text) < 300_000 {
		t.Fatalf("%d bytes of text, %v", len(text), err)
	}
}

// refs is "first 0 R" and the n-1 references after it.
func refs(first, n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "%d 0 R ", first+i)
	}
	return b.String()
}

// The check keeps the cross-reference entries in flat slices: in maps a
// cross-reference stream of a million entries, compressed to 4 KB, took
// 81 MB, two and a half times the library's own table.
func TestReadPDF_CrossReferenceCheckIsCompact(t *testing.T) {
	const n = 1 << 20
	var z bytes.Buffer
	w := zlib.NewWriter(&z)
	_, _ = w.Write(bytes.Repeat([]byte{2, 0x20, 0, 0, 0}, n)) // W [1 3 1]: in object stream 0x200000
	_ = w.Close()
	good := minimalPDF("compact")
	xref := bytes.LastIndex(good, []byte("xref\n0 6"))
	var b bytes.Buffer
	b.Write(good[:xref])
	at := b.Len()
	fmt.Fprintf(&b, "9 0 obj\n<< /Type /XRef /Size %d /W [1 3 1] /Root 1 0 R /Filter /FlateDecode /Length %d >>\nstream\n", n, z.Len())
	b.Write(z.Bytes())
	fmt.Fprintf(&b, "\nendstream\nendobj\nstartxref\n%d\n%%%%EOF\n", at)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	err := pdfCheckStructure(b.Bytes())
	runtime.ReadMemStats(&after)
	if alloc := after.TotalAlloc - before.TotalAlloc; err != nil || alloc > 64<<20 {
		t.Fatalf("%d MB allocated for %d entries (%d bytes), err %v", alloc>>20, n, b.Len(), err)
	}
}
