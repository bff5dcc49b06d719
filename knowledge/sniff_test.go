package knowledge

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/db/dbtest/testdbs"
)

// onePagePDF is a PDF whose one page shows text in Helvetica.
func onePagePDF(text string) []byte {
	stream := fmt.Sprintf("BT /F1 12 Tf 72 720 Td (%s) Tj ET", text)
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

// A PDF whose name and content type say nothing (an upload named "paper",
// application/octet-stream) is read as a PDF: it was read as plain text,
// and its chunks were the PDF's syntax ("1 0 obj << /Type /Catalog …").
func TestInsert_UnnamedPDFIsReadAsPDF(t *testing.T) {
	t.Parallel()
	k := newKB(t, testdbs.SQLite(t), nil)
	res, err := k.Insert(as("alice"), Content{Data: onePagePDF("Hygiea is round"), Filename: "paper", ContentType: "application/octet-stream"})
	if err != nil {
		t.Fatal(err)
	}
	docs, err := k.Search(as("alice"), "Hygiea", nil, 5)
	if err != nil || len(docs) == 0 {
		t.Fatalf("search: %v %v", docs, err)
	}
	if d := docs[0]; strings.Contains(d.Content, "obj") || !strings.Contains(d.Content, "Hygiea is round") || res.Content.Type != "application/pdf" {
		t.Fatalf("chunk %q, type %s", d.Content, res.Content.Type)
	}
}
