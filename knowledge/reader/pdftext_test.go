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

// Words and lines set apart by moves, not by space characters, stay apart:
// pdfTeX sets a word space as a TJ move of about a third of an em, and
// generators start lines with Td, TD or Tm. They ran together ("The
// quickbrownfox"), so neither a keyword search nor a reader found "brown".
func TestReadPDF_MovesSeparateWordsAndLines(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, stream, want string }{
		{"TJ word gaps", "BT /F1 12 Tf [(The) -333 (quick) -250.5 (bro) 28 (wn) -20 (s)] TJ ET", "The quick browns"},
		{"Td to the next line", "BT /F1 12 Tf 72 720 Td (The quick brown) Tj 0 -14 Td (fox jumps) Tj ET", "The quick brown\nfox jumps"},
		{"TD to the next line", "BT /F1 12 Tf 72 720 Td (over the) Tj 0 -14 TD (lazy dog) Tj ET", "over the\nlazy dog"},
		{"Tm to the next line", "BT /F1 12 Tf 1 0 0 1 72 720 Tm (first line) Tj 1 0 0 1 72 706 Tm (second line) Tj ET", "first line\nsecond line"},
		{"Td along the line", "BT /F1 12 Tf 72 720 Td (pub) Tj 15.2 0 Td (lication) Tj ET", "publication"},
		{"Tm along the line", "BT /F1 12 Tf 1 0 0 1 72 720 Tm (st) Tj 1 0 0 1 80.5 720 Tm (ats) Tj ET", "stats"},
		{"a space shown is not doubled", "BT /F1 12 Tf [(one ) -333 (two)] TJ 0 -14 Td (three) Tj ET", "one two\nthree"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			data := pdfOf(
				"<< /Type /Catalog /Pages 2 0 R >>",
				"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
				"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>",
				pdfStream(tt.stream),
				"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>",
			)
			got, err := readWithin(t, PDF, data)
			if err != nil || strings.TrimSpace(got) != tt.want {
				t.Fatalf("text %q (%v), want %q", got, err, tt.want)
			}
		})
	}
}
