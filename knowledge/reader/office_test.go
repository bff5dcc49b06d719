package reader

import (
	"archive/zip"
	"bytes"
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
	objs := []string{
		"<< /Type /Catalog /Pages 2 0 R >>",
		"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
		"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>",
		fmt.Sprintf("<< /Length %d >>\nstream\n%s\nendstream", len(stream), stream),
		"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>",
	}
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
