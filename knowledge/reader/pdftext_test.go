package reader

import (
	"strings"
	"testing"
)

// The " operator (set spacing, next line, show text) is valid PDF: its
// page is read, with the text of ' and Tj around it (the library's
// GetPlainText panicked on every " and the whole PDF was refused as
// "malformed document: pdf: bad ' operator").
func TestReadPDF_QuoteOperators(t *testing.T) {
	t.Parallel()
	data := pdfOf(
		"<< /Type /Catalog /Pages 2 0 R >>",
		"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
		"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>",
		pdfStream("BT /F1 12 Tf 72 720 Td 14 TL (first) Tj 0 0 (second) \" (third) ' T* [(fou) -20 (rth)] TJ ET"),
		"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>",
	)
	out, err := readWithin(t, PDF, data)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Fields(out); strings.Join(got, " ") != "first second third fourth" {
		t.Fatalf("text %q", out)
	}
}
