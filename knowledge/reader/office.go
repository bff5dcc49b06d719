package reader

import (
	"archive/zip"
	"bytes"
	"fmt"
	"io"
	"strings"
	"unicode"
	"unicode/utf8"

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
	// The library interprets a page's decoded content streams holding its
	// text and every pending operand in memory, and a Flate stream inflates
	// about 1,000-fold: the decoded content is measured first (streamed,
	// nothing kept), with the fonts' ToUnicode CMaps, per page and in all.
	maxPDFPageContent = 16 << 20
	maxPDFContent     = 256 << 20
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

// Bounds of a PDF's page tree. The library's own page lookup
// (Reader.Page) follows Kids and Parent links with no bound, so a tree that
// contains itself loops forever: readPDF walks the tree itself.
const (
	maxPDFTreeDepth = 64      // Pages nesting, and a page's Parent chain
	maxPDFTreeNodes = 1 << 17 // Pages and Page dictionaries visited in all
)

// readPDF extracts the text layer with github.com/ledongthuc/pdf; a scan
// without one is ErrNoText.
func readPDF(data []byte) (text string, err error) {
	defer func() {
		if r := recover(); r != nil {
			text, err = "", fmt.Errorf("%w: pdf: %v", ErrMalformed, r)
		}
	}()
	if err := pdfCheckStructure(data); err != nil {
		return "", err
	}
	r, err := pdf.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return "", fmt.Errorf("%w: pdf: %v", ErrMalformed, err)
	}
	pages, err := pdfPages(r.Trailer().Key("Root").Key("Pages"))
	if err != nil {
		return "", err
	}
	var b strings.Builder
	var content int64
	for _, p := range pages {
		n, err := pdfContentSize(p, maxPDFPageContent)
		if err != nil {
			return "", err
		}
		if content += n; content > maxPDFContent {
			return "", fmt.Errorf("%w: pdf: the pages' content streams inflate past %d bytes", ErrMalformed, maxPDFContent)
		}
		res, err := pdfResources(p)
		if err != nil {
			return "", err
		}
		fonts := pdfFontsOf(res)
		// the library interprets each font's ToUnicode CMap for the page
		for _, f := range fonts {
			m, err := pdfStreamSize(f.V.Key("ToUnicode"), maxPDFPageContent, &pdfOperands{cmap: true}, nil)
			if err != nil {
				return "", err
			}
			if content += m; content > maxPDFContent {
				return "", fmt.Errorf("%w: pdf: the pages' content streams inflate past %d bytes", ErrMalformed, maxPDFContent)
			}
		}
		t, forms, err := pdfPageText(p, res, fonts, maxPDFPageContent)
		if err != nil {
			return "", err
		}
		if content += forms; content > maxPDFContent {
			return "", fmt.Errorf("%w: pdf: the pages' content streams inflate past %d bytes", ErrMalformed, maxPDFContent)
		}
		if b.Len()+len(t) > maxPDFText {
			return "", fmt.Errorf("%w: pdf: more than %d bytes of text", ErrMalformed, maxPDFText)
		}
		if b.Len() > 0 && t != "" {
			b.WriteString("\n\n") // a page ends a paragraph
		}
		b.WriteString(t)
	}
	return b.String(), nil
}

// pdfWordGap is the smallest leftward move between a TJ array's strings,
// in thousandths of an em, that separates words: pdfTeX and others set
// word spaces as such moves (about -333) with no space character, where a
// kerning pair moves a few tens.
const pdfWordGap = 150

// maxPDFFormDepth bounds form XObjects drawn inside one another.
const maxPDFFormDepth = 8

// pdfPageText is the text a page's content streams show, with the text of
// the form XObjects they draw (Do), in the order drawn: a page whose text
// sat in forms (pages placed by pdfpages or imposition tools, stamped
// headers and footers) lost it. The forms' streams and their fonts'
// ToUnicode CMaps are measured against budget, every time one is drawn;
// used is what they took. A line break marks each text object and each
// move to another line (T*, ', ", a Td, TD or Tm to another height), a
// space each word gap in a TJ array. Without them the lines and the words
// set apart by moves ran together ("The quickbrown", "brownfox"). A move
// along the line separates nothing: generators set the pieces of one word
// so too ("st" "ats"), and telling the two apart needs the glyphs' widths.
// The library's GetPlainText did so too, and panicked on every valid "
// operator (it falls through to ', which takes one operand, not three).
// A panic on a malformed stream reaches readPDF's recover.
func pdfPageText(p pdf.Page, res pdf.Value, fonts map[string]*pdf.Font, budget int64) (text string, used int64, err error) {
	contents := p.V.Key("Contents")
	if contents.IsNull() {
		return "", 0, nil
	}
	var b strings.Builder
	var enc pdf.TextEncoding = rawText{}
	// pending is the separator owed before the next text shown: "", " "
	// or "\n" (a line break outranks a space)
	pending := ""
	brk := func(sep string) {
		if sep == "\n" || pending == "" {
			pending = sep
		}
	}
	show := func(v pdf.Value) {
		if v.Kind() != pdf.String {
			return
		}
		s := enc.Decode(v.RawString())
		if s == "" {
			return
		}
		if pending != "" && b.Len() > 0 {
			last, _ := utf8.DecodeLastRuneInString(b.String())
			first, _ := utf8.DecodeRuneInString(s)
			if !unicode.IsSpace(last) && !unicode.IsSpace(first) {
				b.WriteString(pending)
			}
		}
		pending = ""
		b.WriteString(s)
	}
	// lineY is the text line's height as Tm set it (Td and TD move it)
	lineY, known := 0.0, false
	var run func(contents, res pdf.Value, fonts map[string]*pdf.Font, depth int)
	// form draws the form XObject name names, if there is one and the
	// budget holds it
	form := func(name string, res pdf.Value, fonts map[string]*pdf.Font, depth int) {
		xo := res.Key("XObject").Key(name)
		if err != nil || depth == maxPDFFormDepth || xo.Kind() != pdf.Stream || xo.Key("Subtype").Name() != "Form" {
			return
		}
		n, e := pdfStreamSize(xo, budget-used, &pdfOperands{}, nil)
		if used += n; e != nil {
			err = e
			return
		}
		// a form without resources of its own uses its drawer's
		if own := xo.Key("Resources"); !own.IsNull() {
			res = own
			if !own.Key("Font").IsNull() {
				fonts = pdfFontsOf(own)
				for _, f := range fonts {
					m, e := pdfStreamSize(f.V.Key("ToUnicode"), budget-used, &pdfOperands{cmap: true}, nil)
					if used += m; e != nil {
						err = e
						return
					}
				}
			}
		}
		saved := enc // a form draws in a graphics state of its own
		run(xo, res, fonts, depth+1)
		enc = saved
	}
	run = func(contents, res pdf.Value, fonts map[string]*pdf.Font, depth int) {
		pdf.Interpret(contents, func(stk *pdf.Stack, op string) {
			args := make([]pdf.Value, stk.Len())
			for i := len(args) - 1; i >= 0; i-- {
				args[i] = stk.Pop()
			}
			last := pdf.Value{}
			if len(args) > 0 {
				last = args[len(args)-1]
			}
			switch op {
			case "BT":
				brk("\n")
				lineY, known = 0, true // BT sets the text matrix to the identity
			case "T*":
				brk("\n")
			case "Td", "TD":
				if len(args) == 2 {
					if ty := args[1].Float64(); ty != 0 {
						brk("\n")
						lineY += ty
					}
				}
			case "Tm":
				if len(args) == 6 {
					if y := args[5].Float64(); !known || y != lineY {
						brk("\n")
						lineY, known = y, true
					}
				}
			case "Tf": // font size
				enc = rawText{}
				if len(args) == 2 {
					if f, ok := fonts[args[0].Name()]; ok {
						enc = f.Encoder()
					}
				}
			case "'", "\"": // next line, then show the last operand
				brk("\n")
				show(last)
			case "Tj":
				show(last)
			case "TJ":
				for i := range last.Len() {
					x := last.Index(i)
					if (x.Kind() == pdf.Integer || x.Kind() == pdf.Real) && -x.Float64() >= pdfWordGap {
						brk(" ")
					}
					show(x)
				}
			case "Do":
				form(last.Name(), res, fonts, depth)
			}
		})
	}
	run(contents, res, fonts, 0)
	if err != nil {
		return "", used, err
	}
	return b.String(), used, nil
}

// rawText is the text of a font the page does not name: its bytes.
type rawText struct{}

func (rawText) Decode(raw string) string { return raw }

// pdfContentSize decodes a page's content streams, counts their operands
// (joined, as the library reads them) and returns their size; over limit
// is ErrMalformed.
func pdfContentSize(p pdf.Page, limit int64) (int64, error) {
	c := p.V.Key("Contents")
	streams := []pdf.Value{c}
	if c.Kind() == pdf.Array {
		streams = streams[:0]
		for i := range c.Len() {
			streams = append(streams, c.Index(i))
		}
	}
	var n int64
	var joined bytes.Buffer
	for _, st := range streams {
		m, err := pdfStreamSize(st, limit-n, nil, &joined)
		if err != nil {
			return 0, err
		}
		n += m
	}
	return n, (&pdfOperands{}).scan(joined.Bytes())
}

// pdfStreamSize decodes a stream, counts its operands with ops (when set)
// and returns its size (0 for a value that is not a stream); over limit is
// ErrMalformed. With keep, the decoded bytes are added to it.
func pdfStreamSize(st pdf.Value, limit int64, ops *pdfOperands, keep *bytes.Buffer) (int64, error) {
	if st.Kind() != pdf.Stream {
		return 0, nil
	}
	// the library allocates a predictor's rows before reading a byte
	parms := st.Key("DecodeParms")
	for i := range max(parms.Len(), 1) {
		p := parms
		if parms.Kind() == pdf.Array {
			p = parms.Index(i)
		}
		if c := p.Key("Columns").Int64(); c < 0 || c > maxPDFColumns {
			return 0, fmt.Errorf("%w: pdf: a stream's predictor has %d columns", ErrMalformed, c)
		}
	}
	rd := st.Reader()
	defer rd.Close()
	var dst io.Writer = io.Discard
	var buf bytes.Buffer
	switch {
	case keep != nil:
		dst = keep
	case ops != nil:
		dst = &buf
	}
	n, err := io.Copy(dst, io.LimitReader(rd, limit+1))
	if n > limit {
		return 0, fmt.Errorf("%w: pdf: a page's content or font streams inflate past %d bytes", ErrMalformed, maxPDFPageContent)
	}
	if err != nil {
		return 0, fmt.Errorf("%w: pdf: %v", ErrMalformed, err)
	}
	if ops != nil {
		return n, ops.scan(buf.Bytes())
	}
	return n, nil
}

// pdfPages returns the page tree's pages in order, walking Kids depth first
// within maxPDFTreeDepth and maxPDFTreeNodes (a tree over either bound, a
// cyclic one among them, is ErrMalformed).
func pdfPages(root pdf.Value) ([]pdf.Page, error) {
	type node struct {
		v     pdf.Value
		depth int
	}
	var pages []pdf.Page
	stack := []node{{root, 0}}
	for visited := 0; len(stack) > 0; visited++ {
		if visited == maxPDFTreeNodes {
			return nil, fmt.Errorf("%w: pdf: the page tree has more than %d nodes (or contains itself)", ErrMalformed, maxPDFTreeNodes)
		}
		n := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		switch n.v.Key("Type").Name() {
		case "Page":
			pages = append(pages, pdf.Page{V: n.v})
		case "Pages":
			if n.depth == maxPDFTreeDepth {
				return nil, fmt.Errorf("%w: pdf: the page tree is deeper than %d (or contains itself)", ErrMalformed, maxPDFTreeDepth)
			}
			kids := n.v.Key("Kids")
			for i := kids.Len() - 1; i >= 0; i-- { // pushed last first: popped in order
				stack = append(stack, node{kids.Index(i), n.depth + 1})
			}
		}
	}
	return pages, nil
}

// pdfResources returns a page's resources, inherited through at most
// maxPDFTreeDepth Parent links (the library's own lookup follows them
// without a bound); a null Value when it has none.
func pdfResources(p pdf.Page) (pdf.Value, error) {
	v := p.V
	for range maxPDFTreeDepth {
		if v.IsNull() {
			return pdf.Value{}, nil
		}
		if res := v.Key("Resources"); !res.IsNull() {
			return res, nil
		}
		v = v.Key("Parent")
	}
	return pdf.Value{}, fmt.Errorf("%w: pdf: a page's Parent chain is longer than %d (or contains itself)", ErrMalformed, maxPDFTreeDepth)
}

// pdfFontsOf returns the fonts of a resource dictionary by name.
func pdfFontsOf(res pdf.Value) map[string]*pdf.Font {
	dict := res.Key("Font")
	fonts := make(map[string]*pdf.Font)
	for _, name := range dict.Keys() {
		fonts[name] = &pdf.Font{V: dict.Key(name)}
	}
	return fonts
}
