package reader

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/ledongthuc/pdf"
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
	out, err := Read(PDF, data)
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
			got, err := Read(PDF, data)
			if err != nil || strings.TrimSpace(got) != tt.want {
				t.Fatalf("text %q (%v), want %q", got, err, tt.want)
			}
		})
	}
}

// xobject is a form XObject stream object drawing s, with resources res
// ("" for none).
func xobject(s, res string) string {
	if res != "" {
		res = " /Resources " + res
	}
	return fmt.Sprintf("<< /Type /XObject /Subtype /Form /BBox [0 0 612 792]%s /Length %d >>\nstream\n%s\nendstream", res, len(s), s)
}

// The text of form XObjects a page draws (Do) is read where they are
// drawn, also of a form inside a form and with the form's own fonts: a
// page whose text sat in forms (pages placed by pdfpages, stamped headers)
// lost it.
func TestReadPDF_FormXObjectsText(t *testing.T) {
	t.Parallel()
	data := pdfOf(
		"<< /Type /Catalog /Pages 2 0 R >>",
		"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
		"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> /XObject << /Fm1 6 0 R /Img 8 0 R >> >> >>",
		pdfStream("BT /F1 12 Tf 72 720 Td (before) Tj ET q /Fm1 Do Q /Img Do /Missing Do BT /F1 12 Tf 72 600 Td (after) Tj ET"),
		"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>",
		xobject("BT /F1 12 Tf 72 700 Td (in the form) Tj ET /Fm2 Do", "<< /XObject << /Fm2 7 0 R >> >>"),
		xobject("BT /F2 12 Tf 72 680 Td (in the inner form, caf\\351) Tj ET", "<< /Font << /F2 5 0 R >> >>"),
		"<< /Type /XObject /Subtype /Image /Width 1 /Height 1 /ColorSpace /DeviceGray /BitsPerComponent 8 /Length 1 >>\nstream\n\x00\nendstream",
	)
	got, err := Read(PDF, data)
	if err != nil || strings.Join(strings.Fields(got), " ") != "before in the form in the inner form, café after" {
		t.Fatalf("text %q (%v)", got, err)
	}
}

// A form drawing itself stops at maxPDFFormDepth, and forms drawn past the
// page's content budget make the PDF malformed.
func TestReadPDF_FormXObjectsBounded(t *testing.T) {
	t.Parallel()
	page := func(content string, forms ...string) []byte {
		objs := []string{
			"<< /Type /Catalog /Pages 2 0 R >>",
			"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
			"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> /XObject << /Fm1 6 0 R >> >> >>",
			flateStream(content),
			"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>",
		}
		return pdfOf(append(objs, forms...)...)
	}
	self := page("/Fm1 Do", xobject("BT /F1 12 Tf (again) Tj ET /Fm1 Do /Fm1 Do", ""))
	got, err := Read(PDF, self)
	if err != nil || strings.Count(got, "again") != 1<<maxPDFFormDepth-1 {
		t.Fatalf("a form drawing itself twice: %d times its text, %v", strings.Count(got, "again"), err)
	}
	// the forms drawn are measured each time against the page's budget
	// (maxPDFPageContent; 2 KB here): a small form drawn a million times
	// would be decoded a million times
	form := "BT /F1 12 Tf (padding) Tj ET"
	many := page(strings.Repeat("/Fm1 Do ", 1000), xobject(form, ""))
	r, err := pdf.NewReader(bytes.NewReader(many), int64(len(many)))
	if err != nil {
		t.Fatal(err)
	}
	p := r.Page(1)
	res, err := pdfResources(p)
	if err != nil {
		t.Fatal(err)
	}
	text, used, err := pdfPageText(p, res, pdfFontsOf(res), 1000*int64(len(form)))
	if err != nil || strings.Count(text, "padding") != 1000 || used != 1000*int64(len(form)) {
		t.Fatalf("within the budget: %d drawn, %d bytes used, %v", strings.Count(text, "padding"), used, err)
	}
	if _, used, err = pdfPageText(p, res, pdfFontsOf(res), 2048); !errors.Is(err, ErrMalformed) || used > 2048+int64(len(form)) {
		t.Fatalf("past the budget: %d bytes used, %v", used, err)
	}
}
