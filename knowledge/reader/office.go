package reader

import (
	"archive/zip"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"

	docx "github.com/fumiama/go-docx"
	"github.com/ledongthuc/pdf"
)

// Zip-bomb limits of a DOCX (checked before the library reads it; Go's
// archive/zip fails an entry that inflates past its declared size, so the
// declared sizes bound the work).
const (
	maxDocxEntry = 64 << 20
	maxDocxTotal = 256 << 20
	maxDocxRatio = 200
	maxPDFText   = 64 << 20
)

// ErrZipBomb: a DOCX declares more data than the limits, or a compression
// ratio no document has.
var ErrZipBomb = fmt.Errorf("%w: the DOCX inflates too much (zip bomb?)", ErrMalformed)

func checkZip(data []byte) error {
	z, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return fmt.Errorf("%w: docx: %v", ErrMalformed, err)
	}
	var total uint64
	for _, f := range z.File {
		total += f.UncompressedSize64
		if f.UncompressedSize64 > maxDocxEntry || total > maxDocxTotal ||
			(f.CompressedSize64 > 0 && f.UncompressedSize64/f.CompressedSize64 > maxDocxRatio && f.UncompressedSize64 > 1<<20) {
			return fmt.Errorf("%w: %s declares %d bytes from %d", ErrZipBomb, f.Name, f.UncompressedSize64, f.CompressedSize64)
		}
	}
	return nil
}

// readDOCX extracts paragraphs and tables (as Markdown tables) with
// github.com/fumiama/go-docx (docs/adr/pdf-docx-readers.md).
func readDOCX(data []byte) (text string, err error) {
	if err := checkZip(data); err != nil {
		return "", err
	}
	defer func() {
		if r := recover(); r != nil {
			text, err = "", fmt.Errorf("%w: docx: %v", ErrMalformed, r)
		}
	}()
	doc, err := docx.Parse(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return "", fmt.Errorf("%w: docx: %v", ErrMalformed, err)
	}
	var b strings.Builder
	for _, it := range doc.Document.Body.Items {
		switch x := it.(type) {
		case *docx.Paragraph:
			b.WriteString(x.String())
			b.WriteString("\n\n")
		case *docx.Table:
			b.WriteString(x.String())
			b.WriteString("\n\n")
		}
	}
	return b.String(), nil
}

// readPDF extracts the text layer with github.com/ledongthuc/pdf; a scan
// without one is ErrNoText.
func readPDF(data []byte) (text string, err error) {
	defer func() {
		if r := recover(); r != nil {
			text, err = "", fmt.Errorf("%w: pdf: %v", ErrMalformed, r)
		}
	}()
	r, err := pdf.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return "", fmt.Errorf("%w: pdf: %v", ErrMalformed, err)
	}
	tr, err := r.GetPlainText()
	if err != nil {
		return "", fmt.Errorf("%w: pdf: %v", ErrMalformed, err)
	}
	out, err := io.ReadAll(io.LimitReader(tr, maxPDFText+1))
	if err != nil && !errors.Is(err, io.EOF) {
		return "", fmt.Errorf("%w: pdf: %v", ErrMalformed, err)
	}
	if len(out) > maxPDFText {
		return "", fmt.Errorf("%w: pdf: more than %d bytes of text", ErrMalformed, maxPDFText)
	}
	return string(out), nil
}
