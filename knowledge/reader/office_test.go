package reader

import (
	"archive/zip"
	"bytes"
	"compress/zlib"
	"errors"
	"fmt"
	"strings"
	"testing"

	docx "github.com/fumiama/go-docx"
)

// minimalPDF writes a one-page PDF; text, when set, is drawn with Helvetica.
func minimalPDF(text string) []byte {
	stream := ""
	if text != "" {
		stream = fmt.Sprintf("BT /F1 12 Tf 72 720 Td (%s) Tj ET", text)
	}
	return pdfOf(
		"<< /Type /Catalog /Pages 2 0 R >>",
		"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
		"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>",
		pdfStream(stream),
		"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>",
	)
}

// pdfStream is a stream object's text.
func pdfStream(s string) string {
	return fmt.Sprintf("<< /Length %d >>\nstream\n%s\nendstream", len(s), s)
}

// pdfOf is a PDF whose object i+1 is objs[i] (object 1 the catalog), with
// its cross-reference table.
func pdfOf(objs ...string) []byte {
	var b bytes.Buffer
	b.WriteString("%PDF-1.4\n")
	offsets := make([]int, len(objs))
	for i, o := range objs {
		offsets[i] = b.Len()
		fmt.Fprintf(&b, "%d 0 obj\n%s\nendobj\n", i+1, o)
	}
	xref := b.Len()
	fmt.Fprintf(&b, "xref\n0 %d\n0000000000 65535 f \n", len(objs)+1)
	for _, off := range offsets {
		fmt.Fprintf(&b, "%010d 00000 n \n", off)
	}
	fmt.Fprintf(&b, "trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n", len(objs)+1, xref)
	return b.Bytes()
}

// Pages nested in the tree come out in document order, and a page's fonts
// may be inherited from an ancestor's resources.
func TestReadPDF_PagesInTreeOrderWithInheritedFonts(t *testing.T) {
	t.Parallel()
	data := pdfOf(
		"<< /Type /Catalog /Pages 2 0 R >>",
		"<< /Type /Pages /Kids [3 0 R 6 0 R] /Count 2 /Resources << /Font << /F1 8 0 R >> >> >>",
		"<< /Type /Pages /Parent 2 0 R /Kids [4 0 R] /Count 1 >>",
		"<< /Type /Page /Parent 3 0 R /Contents 5 0 R >>",
		pdfStream("BT /F1 12 Tf 72 720 Td (first page) Tj ET"),
		"<< /Type /Page /Parent 2 0 R /Contents 7 0 R >>",
		pdfStream("BT /F1 12 Tf 72 720 Td (second page) Tj ET"),
		"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>",
	)
	got, err := Read(PDF, data)
	first, second := strings.Index(got, "first page"), strings.Index(got, "second page")
	if err != nil || first < 0 || second < first {
		t.Fatalf("%q %v", got, err)
	}
}

// A page tree that contains itself, through Kids or a page's Parent, is
// malformed; the PDF library's own page lookup looped forever on both
// (found by FuzzRead).
func TestReadPDF_CyclicPageTreesAreMalformed(t *testing.T) {
	t.Parallel()
	font := "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>"
	tests := []struct {
		name string
		data []byte
	}{
		{"Pages is its own kid", pdfOf(
			"<< /Type /Catalog /Pages 2 0 R >>",
			"<< /Type /Pages /Kids [2 0 R] /Count 1 >>",
		)},
		{"two Pages are each other's kids", pdfOf(
			"<< /Type /Catalog /Pages 2 0 R >>",
			"<< /Type /Pages /Kids [3 0 R 3 0 R] /Count 2 >>",
			"<< /Type /Pages /Kids [2 0 R 2 0 R] /Count 2 >>",
		)},
		{"a page is its own parent", pdfOf(
			"<< /Type /Catalog /Pages 2 0 R >>",
			"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
			"<< /Type /Page /Parent 3 0 R /Contents 4 0 R >>",
			pdfStream("BT /F1 12 Tf 72 720 Td (x) Tj ET"),
			font,
		)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if _, err := Read(PDF, tt.data); !errors.Is(err, ErrMalformed) {
				t.Fatalf("err = %v, want ErrMalformed", err)
			}
		})
	}
}

func TestReadPDF_TextLayerAndScans(t *testing.T) {
	t.Parallel()
	got, err := Read(PDF, minimalPDF("Walruses sleep on ice"))
	if err != nil || !strings.Contains(got, "Walruses sleep on ice") {
		t.Fatalf("%q %v", got, err)
	}
	if _, err := Read(PDF, minimalPDF("")); !errors.Is(err, ErrNoText) {
		t.Fatalf("a PDF without a text layer: %v", err)
	}
	if _, err := Read(PDF, []byte("%PDF-1.4 garbage")); !errors.Is(err, ErrMalformed) {
		t.Fatalf("garbage PDF: %v", err)
	}
}

func TestReadDOCX_ParagraphsAndTables(t *testing.T) {
	t.Parallel()
	d := docx.New().WithDefaultTheme()
	d.AddParagraph().AddText("Quarterly report")
	d.AddParagraph().AddText("Revenue grew in the north.")
	tbl := d.AddTable(1, 2, 0, nil)
	tbl.TableRows[0].TableCells[0].AddParagraph().AddText("region")
	tbl.TableRows[0].TableCells[1].AddParagraph().AddText("north")
	var b bytes.Buffer
	if _, err := d.WriteTo(&b); err != nil {
		t.Fatal(err)
	}
	got, err := Read(DOCX, b.Bytes())
	if err != nil || !strings.Contains(got, "Revenue grew in the north.") || !strings.Contains(got, "region") {
		t.Fatalf("%q %v", got, err)
	}
}

func TestReadDOCX_ZipBombRefused(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	z := zip.NewWriter(&b)
	w, _ := z.Create("word/document.xml")
	zeros := make([]byte, 1<<20)
	for range 100 { // 100 MB of zeros, about 100 KB compressed
		w.Write(zeros)
	}
	z.Close()
	if _, err := Read(DOCX, b.Bytes()); !errors.Is(err, ErrZipBomb) {
		t.Fatalf("err %v", err)
	}
	if _, err := Read(DOCX, []byte("PK not a zip")); !errors.Is(err, ErrMalformed) {
		t.Fatalf("err %v", err)
	}
}

// flateStream is a FlateDecode stream object of s.
func flateStream(s string) string {
	var z bytes.Buffer
	w := zlib.NewWriter(&z)
	w.Write([]byte(s))
	w.Close()
	return fmt.Sprintf("<< /Length %d /Filter /FlateDecode >>\nstream\n%s\nendstream", z.Len(), z.Bytes())
}

// flatePDF is minimalPDF with a FlateDecode content stream.
func flatePDF(content string) []byte {
	return pdfOf(
		"<< /Type /Catalog /Pages 2 0 R >>",
		"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
		"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>",
		flateStream(content),
		"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>",
	)
}

// A page whose content stream inflates past maxPDFPageContent is refused
// before the library interprets it: it would hold the page's text, and
// every operand before an operator, in memory (a 20 KB file gave 2 MB of
// text here; a 50 MB one, gigabytes). Compressed content within the limit
// still reads.
func TestReadPDF_ContentStreamBombRefused(t *testing.T) {
	t.Parallel()
	if text, err := Read(PDF, flatePDF("BT /F1 12 Tf 72 720 Td (compressed text) Tj ET")); err != nil || !strings.Contains(text, "compressed text") {
		t.Fatalf("a compressed page: %q, %v", text, err)
	}
	bomb := flatePDF(strings.Repeat("BT (a) Tj ET\n", maxPDFPageContent/13+1))
	if len(bomb) > 200<<10 {
		t.Fatalf("the bomb is %d bytes: not a bomb", len(bomb))
	}
	if text, err := Read(PDF, bomb); !errors.Is(err, ErrMalformed) {
		t.Fatalf("content inflating past %d bytes: %d bytes of text, err %v", maxPDFPageContent, len(text), err)
	}
}

// A font's ToUnicode CMap, which the library interprets for every page
// using the font, is measured against the same limit.
func TestReadPDF_ToUnicodeBombRefused(t *testing.T) {
	t.Parallel()
	bomb := pdfOf(
		"<< /Type /Catalog /Pages 2 0 R >>",
		"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
		"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>",
		pdfStream("BT /F1 12 Tf 72 720 Td (text) Tj ET"),
		"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /ToUnicode 6 0 R >>",
		flateStream(strings.Repeat("0 ", maxPDFPageContent/2+1)),
	)
	if len(bomb) > 200<<10 {
		t.Fatalf("the bomb is %d bytes: not a bomb", len(bomb))
	}
	if text, err := Read(PDF, bomb); !errors.Is(err, ErrMalformed) {
		t.Fatalf("a CMap inflating past %d bytes: %q, err %v", maxPDFPageContent, text, err)
	}
}
