package reader

import (
	"archive/zip"
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"path"
	"strings"
)

// maxDocxText bounds the text a DOCX renders to.
const maxDocxText = 64 << 20

// maxDocxNesting bounds the paragraphs (in text boxes) and tables nested in
// one another that stay apart: each level copies the text inside it into
// its container, so nesting thousands deep would copy the text thousands
// of times. Deeper ones are read into the one at the bound.
const maxDocxNesting = 32

// readDOCX extracts a DOCX's text from its main document part with
// encoding/xml: paragraphs, and tables as Markdown tables
// (docs/adr/docx-text-walk.md). Every run's text counts wherever it sits:
// in a hyperlink, a content control, a tracked insertion, a smart tag, a
// field, a text box or a table cell, nested tables among them. Deleted and
// moved-away text, field instructions and a drawing's fallback copy do not.
func readDOCX(data []byte) (string, error) {
	if err := checkZip(data); err != nil {
		return "", err
	}
	z, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return "", fmt.Errorf("%w: docx: %v", ErrMalformed, err)
	}
	f := docxMainPart(z)
	if f == nil {
		return "", fmt.Errorf("%w: docx: no main document part (word/document.xml)", ErrMalformed)
	}
	rc, err := f.Open()
	if err != nil {
		return "", fmt.Errorf("%w: docx: %v", ErrMalformed, err)
	}
	defer rc.Close()
	w := &docxWalker{}
	if err := w.walk(xml.NewDecoder(rc)); err != nil {
		return "", err
	}
	return w.out.String(), nil
}

// docxMainPart is the part the package relationships name as the office
// document, else word/document.xml.
func docxMainPart(z *zip.Reader) *zip.File {
	files := make(map[string]*zip.File, len(z.File))
	for _, f := range z.File {
		files[f.Name] = f
	}
	if rels := files["_rels/.rels"]; rels != nil {
		if rc, err := rels.Open(); err == nil {
			var doc struct {
				Rels []struct {
					Type   string `xml:"Type,attr"`
					Target string `xml:"Target,attr"`
				} `xml:"Relationship"`
			}
			err := xml.NewDecoder(io.LimitReader(rc, 1<<20)).Decode(&doc)
			rc.Close()
			for _, r := range doc.Rels {
				if err == nil && strings.HasSuffix(r.Type, "/officeDocument") {
					if f := files[strings.TrimPrefix(path.Clean("/"+r.Target), "/")]; f != nil {
						return f
					}
				}
			}
		}
	}
	return files["word/document.xml"]
}

// docxWalker renders WordprocessingML: a paragraph is a block of text, a
// table a Markdown table whose cells hold their paragraphs on one line.
type docxWalker struct {
	out    strings.Builder
	paras  []*strings.Builder // open paragraphs, innermost last (a text box's sit inside one)
	tables []*docxTable       // open tables, innermost last
	inText bool               // inside a w:t
	// open w:p and w:tbl elements, also those past maxDocxNesting
	pDepth, tblDepth int
}

type docxTable struct {
	rows [][]string
	row  []string
	cell *strings.Builder // the open cell, nil between cells
}

// skipped are elements whose text is not the document's: deleted and
// moved-away runs, a drawing's fallback copy of what its choice shows,
// properties (a content control's placeholder, a paragraph's tab stops,
// which are w:tab elements too).
var docxSkipped = map[string]bool{"del": true, "moveFrom": true, "Fallback": true, "sdtPr": true, "sdtEndPr": true,
	"pPr": true, "rPr": true, "tblPr": true, "trPr": true, "tcPr": true, "sectPr": true}

// maxDocxDepth bounds the elements open at once: encoding/xml keeps a
// stack entry (about 190 bytes) for each, so a part nested millions deep
// took gigabytes. Word nests a few dozen.
const maxDocxDepth = 4096

func (w *docxWalker) walk(d *xml.Decoder) error {
	depth := 0
	for {
		tok, err := d.Token()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%w: docx: %v", ErrMalformed, err)
		}
		switch t := tok.(type) {
		case xml.StartElement:
			if depth++; depth > maxDocxDepth {
				return fmt.Errorf("%w: docx: elements nested more than %d deep", ErrMalformed, maxDocxDepth)
			}
			if docxSkipped[t.Name.Local] {
				if err := w.skip(d, maxDocxDepth-depth); err != nil {
					return err
				}
				depth--
				continue
			}
			w.start(t.Name.Local)
		case xml.EndElement:
			depth--
			w.end(t.Name.Local)
		case xml.CharData:
			if w.inText {
				w.write(string(t))
			}
		}
		if w.out.Len() > maxDocxText {
			return fmt.Errorf("%w: docx: more than %d bytes of text", ErrMalformed, maxDocxText)
		}
	}
}

// skip reads past the end of the element just started, as Decoder.Skip
// does, with at most room elements open inside it.
func (w *docxWalker) skip(d *xml.Decoder, room int) error {
	for depth := 0; ; {
		tok, err := d.Token()
		if err != nil {
			return fmt.Errorf("%w: docx: %v", ErrMalformed, err)
		}
		switch tok.(type) {
		case xml.StartElement:
			if depth++; depth > room {
				return fmt.Errorf("%w: docx: elements nested more than %d deep", ErrMalformed, maxDocxDepth)
			}
		case xml.EndElement:
			if depth == 0 {
				return nil
			}
			depth--
		}
	}
}

func (w *docxWalker) start(name string) {
	switch name {
	case "p":
		if w.pDepth++; w.pDepth <= maxDocxNesting {
			w.paras = append(w.paras, &strings.Builder{})
		}
	case "t":
		w.inText = true
	case "tab", "ptab":
		w.write("\t")
	case "br", "cr":
		w.write("\n")
	case "noBreakHyphen":
		w.write("-")
	case "tbl":
		if w.tblDepth++; w.tblDepth <= maxDocxNesting {
			w.tables = append(w.tables, &docxTable{})
		}
	case "tc":
		if t := w.table(); t != nil && t.cell == nil {
			t.cell = &strings.Builder{}
		}
	}
}

func (w *docxWalker) end(name string) {
	switch name {
	case "t":
		w.inText = false
	case "p":
		if n := len(w.paras); n > 0 && w.pDepth <= maxDocxNesting {
			p := w.paras[n-1].String()
			w.paras = w.paras[:n-1]
			w.block(p)
		}
		w.pDepth = max(w.pDepth-1, 0)
	case "tc":
		if t := w.table(); t != nil && t.cell != nil && w.tblDepth <= maxDocxNesting {
			t.row = append(t.row, t.cell.String())
			t.cell = nil
		}
	case "tr":
		if t := w.table(); t != nil && w.tblDepth <= maxDocxNesting {
			t.rows = append(t.rows, t.row)
			t.row = nil
		}
	case "tbl":
		defer func() { w.tblDepth = max(w.tblDepth-1, 0) }()
		if n := len(w.tables); n > 0 && w.tblDepth <= maxDocxNesting {
			t := w.tables[n-1]
			w.tables = w.tables[:n-1]
			if outer := w.table(); len(w.paras) > 0 || outer != nil && outer.cell != nil {
				w.block(t.plain()) // a table in a cell: its cells on the cell's line
			} else {
				w.block(t.markdown())
			}
		}
	}
}

func (w *docxWalker) table() *docxTable {
	if n := len(w.tables); n > 0 {
		return w.tables[n-1]
	}
	return nil
}

// write adds run text to the innermost open paragraph (or, outside one,
// to the innermost container).
func (w *docxWalker) write(s string) {
	if n := len(w.paras); n > 0 {
		w.paras[n-1].WriteString(s)
		return
	}
	w.block(s)
}

// block adds a finished paragraph or table to its container: the
// innermost open paragraph (a text box's), table cell, or the document.
func (w *docxWalker) block(s string) {
	if strings.TrimSpace(s) == "" {
		return
	}
	switch t := w.table(); {
	case len(w.paras) > 0:
		joinSpaced(w.paras[len(w.paras)-1], s)
	case t != nil && t.cell != nil:
		joinSpaced(t.cell, s)
	default:
		w.out.WriteString(s)
		w.out.WriteString("\n\n")
	}
}

// joinSpaced appends s to b, a space between them unless one is there.
func joinSpaced(b *strings.Builder, s string) {
	if b.Len() > 0 && !strings.HasSuffix(b.String(), " ") && !strings.HasPrefix(s, " ") {
		b.WriteString(" ")
	}
	b.WriteString(s)
}

// markdown renders the table with its first row as the header; a cell's
// lines and pipes are kept on its line. A short row stays short (padding
// it to the widest would let a few bytes of XML render to a lot of text).
func (t *docxTable) markdown() string {
	cols := 0
	for _, r := range t.rows {
		cols = max(cols, len(r))
	}
	if cols == 0 {
		return ""
	}
	cell := strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ", "|", `\|`)
	var b strings.Builder
	for i, r := range t.rows {
		b.WriteString("|")
		for _, c := range r {
			b.WriteString(" " + strings.TrimSpace(cell.Replace(c)) + " |")
		}
		if i == 0 {
			b.WriteString("\n|" + strings.Repeat(" --- |", cols))
		}
		if i < len(t.rows)-1 {
			b.WriteString("\n")
		}
	}
	return b.String()
}

// plain is the table's non-empty cells separated by spaces.
func (t *docxTable) plain() string {
	var cells []string
	for _, r := range t.rows {
		for _, c := range r {
			if c = strings.TrimSpace(c); c != "" {
				cells = append(cells, c)
			}
		}
	}
	return strings.Join(cells, " ")
}
