package reader

import (
	"bytes"
	"cmp"
	"compress/zlib"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
)

// The PDF library reads a file's cross-reference sections and object
// streams trusting the numbers in them: a section whose Prev names itself
// looped forever, an entry numbered four billion allocated a table of that
// many entries (a fatal out of memory, not a panic: a 450-byte upload
// ended the process), an object stream's N of 2^62 looped that many times,
// an object stream holding itself recursed until the stack overflowed
// (fatal too). pdfCheckStructure reads the same sections first, with a
// lexer of its own, and refuses what the library would not survive.

// maxPDFObjects is the highest object number a PDF of n bytes may use: the
// library allocates a table entry (32 bytes) for every number up to it.
// PDF's own implementation limit is 8,388,607.
func maxPDFObjects(n int) int64 { return min(max(1<<20, 4*int64(n)), 1<<23) }

// maxPDFColumns bounds a Flate predictor's Columns: the library allocates
// two rows of that many bytes before reading a byte of the stream.
const maxPDFColumns = 1 << 20

// maxPDFXrefSections bounds a file's cross-reference sections (Prev links).
const maxPDFXrefSections = 1 << 12

var errPDFStructure = fmt.Errorf("%w: pdf", ErrMalformed)

func pdfStructErr(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{errPDFStructure}, args...)...)
}

type (
	pdfKeyword string
	pdfName    string
	pdfRef     struct{ id, gen int64 }
	pdfDict    map[pdfName]any
	pdfArray   []any
)

// pdfLex reads PDF tokens as the library's lexer does.
type pdfLex struct {
	data []byte
	pos  int
}

func pdfSpace(c byte) bool {
	return c == 0 || c == '\t' || c == '\n' || c == '\f' || c == '\r' || c == ' '
}

func pdfDelim(c byte) bool { return bytes.IndexByte([]byte("<>()[]{}/%"), c) >= 0 }

// token returns the next token: int64, float64 (as a keyword's text is
// not needed), bool, pdfKeyword, pdfName, string, or io.EOF at the end.
func (l *pdfLex) token() (any, error) {
	for l.pos < len(l.data) {
		c := l.data[l.pos]
		if pdfSpace(c) {
			l.pos++
		} else if c == '%' {
			for l.pos < len(l.data) && l.data[l.pos] != '\r' && l.data[l.pos] != '\n' {
				l.pos++
			}
		} else {
			break
		}
	}
	if l.pos >= len(l.data) {
		return io.EOF, nil
	}
	c := l.data[l.pos]
	l.pos++
	switch c {
	case '<':
		if l.pos < len(l.data) && l.data[l.pos] == '<' {
			l.pos++
			return pdfKeyword("<<"), nil
		}
		// pairs of hex digits, spaces between, as the library reads
		// them: where it stops at a bad digit, so does this
		var s []byte
		for {
			c, ok := l.nonSpace()
			if !ok {
				return nil, pdfStructErr("unterminated hex string")
			}
			if c == '>' {
				return string(s), nil
			}
			c2, ok := l.nonSpace()
			h, h2 := unhexDigit(c), unhexDigit(c2)
			if !ok || h < 0 || h2 < 0 {
				return nil, pdfStructErr("malformed hex string")
			}
			s = append(s, byte(h<<4|h2))
		}
	case '(':
		depth := 1
		start := l.pos
		for l.pos < len(l.data) {
			c := l.data[l.pos]
			l.pos++
			switch c {
			case '\\':
				// the library stops at an escape it does not know
				if l.pos < len(l.data) && !bytes.ContainsRune([]byte("nrbtf()\\\r\n01234567"), rune(l.data[l.pos])) {
					l.pos++
					return nil, pdfStructErr("invalid escape in a string")
				}
				l.pos++
			case '(':
				depth++
			case ')':
				if depth--; depth == 0 {
					return string(l.data[start : l.pos-1]), nil
				}
			}
		}
		return nil, pdfStructErr("unterminated string")
	case '[', ']', '{', '}':
		return pdfKeyword(c), nil
	case '/':
		var name []byte
		for l.pos < len(l.data) && !pdfDelim(l.data[l.pos]) && !pdfSpace(l.data[l.pos]) {
			c := l.data[l.pos]
			l.pos++
			if c == '#' {
				// the two bytes after it, whatever they are, as the
				// library reads them
				h, h2 := -1, -1
				if l.pos+1 < len(l.data) {
					h, h2 = unhexDigit(l.data[l.pos]), unhexDigit(l.data[l.pos+1])
				}
				l.pos = min(l.pos+2, len(l.data))
				if h < 0 || h2 < 0 {
					return nil, pdfStructErr("malformed name")
				}
				c = byte(h<<4 | h2)
			}
			name = append(name, c)
		}
		return pdfName(name), nil
	case '>':
		if l.pos < len(l.data) && l.data[l.pos] == '>' {
			l.pos++
			return pdfKeyword(">>"), nil
		}
	}
	if pdfDelim(c) {
		return nil, pdfStructErr("unexpected delimiter %q", c)
	}
	start := l.pos - 1
	for l.pos < len(l.data) && !pdfDelim(l.data[l.pos]) && !pdfSpace(l.data[l.pos]) {
		l.pos++
	}
	s := string(l.data[start:l.pos])
	switch s {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return n, nil
	}
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		return f, nil
	}
	return pdfKeyword(s), nil
}

// nonSpace returns the next byte that is not white space.
func (l *pdfLex) nonSpace() (byte, bool) {
	for l.pos < len(l.data) {
		c := l.data[l.pos]
		l.pos++
		if !pdfSpace(c) {
			return c, true
		}
	}
	return 0, false
}

func unhexDigit(c byte) int {
	switch {
	case '0' <= c && c <= '9':
		return int(c - '0')
	case 'a' <= c && c <= 'f':
		return int(c-'a') + 10
	case 'A' <= c && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}

// object reads one object: a dictionary, an array, a reference or a token.
func (l *pdfLex) object(depth int) (any, error) {
	if depth > 1000 {
		return nil, pdfStructErr("objects nested too deep")
	}
	tok, err := l.token()
	if err != nil {
		return nil, err
	}
	switch tok {
	case pdfKeyword("<<"):
		d := pdfDict{}
		for {
			k, err := l.token()
			if err != nil {
				return nil, err
			}
			if k == pdfKeyword(">>") || k == io.EOF {
				return d, nil
			}
			name, ok := k.(pdfName)
			if !ok {
				return nil, pdfStructErr("a dictionary key is not a name")
			}
			if d[name], err = l.object(depth + 1); err != nil {
				return nil, err
			}
		}
	case pdfKeyword("["):
		var a pdfArray
		for {
			save := l.pos
			t, err := l.token()
			if err != nil {
				return nil, err
			}
			if t == pdfKeyword("]") || t == io.EOF {
				return a, nil
			}
			l.pos = save
			v, err := l.object(depth + 1)
			if err != nil {
				return nil, err
			}
			a = append(a, v)
		}
	}
	if id, ok := tok.(int64); ok {
		save := l.pos
		if gen, err := l.token(); err == nil {
			if _, ok := gen.(int64); ok {
				if r, err := l.token(); err == nil && r == pdfKeyword("R") {
					return pdfRef{id, gen.(int64)}, nil
				}
			}
		}
		l.pos = save
		return id, nil
	}
	return tok, nil
}

// pdfIndirect is an "id gen obj" object read at an offset; stream is the
// offset of its stream's data, or -1.
type pdfIndirect struct {
	id     int64
	value  any
	stream int
}

func (l *pdfLex) indirect() (pdfIndirect, error) {
	id, err := l.token()
	if err != nil {
		return pdfIndirect{}, err
	}
	gen, err := l.token()
	if err != nil {
		return pdfIndirect{}, err
	}
	kw, err := l.token()
	if err != nil {
		return pdfIndirect{}, err
	}
	n, ok1 := id.(int64)
	_, ok2 := gen.(int64)
	if !ok1 || !ok2 || kw != pdfKeyword("obj") {
		return pdfIndirect{}, pdfStructErr("no object where the cross-reference points")
	}
	v, err := l.object(0)
	if err != nil {
		return pdfIndirect{}, err
	}
	obj := pdfIndirect{id: n, value: v, stream: -1}
	if _, ok := v.(pdfDict); ok {
		save := l.pos
		if t, err := l.token(); err == nil && t == pdfKeyword("stream") {
			if l.pos < len(l.data) && l.data[l.pos] == '\r' {
				l.pos++
			}
			if l.pos < len(l.data) && l.data[l.pos] == '\n' {
				l.pos++
			}
			obj.stream = l.pos
		} else {
			l.pos = save
		}
	}
	return obj, nil
}

// pdfXref is the checker's view of the cross-reference entries: where each
// object is (every offset any section gives it) and which objects are in
// object streams (by the stream holding them).
type pdfXref struct {
	data       []byte
	maxObjects int64
	// flat and sorted once read (maps of them took 100 bytes an entry,
	// more than the library's own table)
	offsets    []pdfOffset    // every offset a section gives an object
	inStream   []int64        // objects some section puts in an object stream
	containers map[int64]bool // the object streams named
	encrypted  bool
}

type pdfOffset struct{ id, off int64 }

// maxPDFObjectStreams bounds the object streams a PDF's sections name
// (writers put a hundred objects or more in each).
const maxPDFObjectStreams = 1 << 16

// pdfCheckStructure walks the cross-reference sections as the library's
// NewReader does, then checks the object streams they name.
func pdfCheckStructure(data []byte) error {
	x := &pdfXref{data: data, maxObjects: maxPDFObjects(len(data)), containers: map[int64]bool{}}
	start, ok := pdfStartXref(data)
	if !ok {
		return nil // the library refuses it before reading a section
	}
	visited := map[int]bool{}
	var entries int64
	for off, n := start, 0; off >= 0; n++ {
		if off >= int64(len(data)) {
			return pdfStructErr("a cross-reference offset is past the end")
		}
		l := &pdfLex{data: data, pos: int(off)}
		// the section's first token, where skipping space led
		save := l.pos
		if _, err := l.token(); err != nil {
			return err
		}
		at := l.pos
		l.pos = save
		if visited[at] || n == maxPDFXrefSections {
			return pdfStructErr("the cross-reference sections' Prev links loop or pass %d", maxPDFXrefSections)
		}
		visited[at] = true
		trailer, err := x.section(l, &entries)
		if err != nil {
			return err
		}
		if trailer["Encrypt"] != nil {
			x.encrypted = true
		}
		off = -1
		switch p := trailer["Prev"].(type) {
		case int64:
			off = p
		case nil:
		default:
			return pdfStructErr("a cross-reference Prev is not a number")
		}
	}
	return x.checkContainers()
}

// pdfStartXref finds the offset after the last "startxref" line as the
// library does (in the last 100 bytes).
func pdfStartXref(data []byte) (int64, bool) {
	if len(data) < 100 {
		return 0, false
	}
	tail := bytes.TrimRight(data[len(data)-100:], "\r\n\t ")
	end := len(tail)
	for {
		i := bytes.LastIndex(tail[:end], []byte("startxref"))
		if i <= 0 || i+9 >= len(tail) {
			return 0, false
		}
		if (tail[i-1] == '\n' || tail[i-1] == '\r') && (tail[i+9] == '\n' || tail[i+9] == '\r') {
			l := &pdfLex{data: data, pos: len(data) - 100 + i + 9}
			t, err := l.token()
			n, ok := t.(int64)
			return n, err == nil && ok
		}
		end = i
	}
}

// section reads one cross-reference section at l (a table and its trailer,
// or a stream) and returns its trailer dictionary.
func (x *pdfXref) section(l *pdfLex, entries *int64) (pdfDict, error) {
	save := l.pos
	t, err := l.token()
	if err != nil {
		return nil, err
	}
	if t == pdfKeyword("xref") {
		for {
			t, err := l.token()
			if err != nil {
				return nil, err
			}
			if t == pdfKeyword("trailer") {
				break
			}
			n, err := l.token()
			if err != nil {
				return nil, err
			}
			first, ok1 := t.(int64)
			count, ok2 := n.(int64)
			if !ok1 || !ok2 || first < 0 || count < 0 || first > x.maxObjects-count {
				return nil, pdfStructErr("a cross-reference subsection numbers objects past %d", x.maxObjects)
			}
			if *entries += count; *entries > x.maxObjects {
				return nil, pdfStructErr("more than %d cross-reference entries", x.maxObjects)
			}
			for i := range count {
				off, err1 := l.token()
				_, err2 := l.token()
				kind, err3 := l.token()
				if err := errors.Join(err1, err2, err3); err != nil {
					return nil, err
				}
				if o, ok := off.(int64); ok && kind == pdfKeyword("n") {
					x.offsets = append(x.offsets, pdfOffset{first + i, o})
				}
			}
		}
		d, err := l.object(0)
		if err != nil {
			return nil, err
		}
		trailer, ok := d.(pdfDict)
		if !ok {
			return nil, pdfStructErr("no trailer dictionary after a cross-reference table")
		}
		return trailer, nil
	}
	l.pos = save
	obj, err := l.indirect()
	if err != nil {
		return nil, err
	}
	dict, ok := obj.value.(pdfDict)
	if !ok || obj.stream < 0 {
		return nil, pdfStructErr("no cross-reference stream where startxref or Prev points")
	}
	return dict, x.xrefStream(dict, obj.stream, entries)
}

// xrefStream records a cross-reference stream's entries, its Size, Index
// and W bounded as the library's table is.
func (x *pdfXref) xrefStream(d pdfDict, at int, entries *int64) error {
	size, _ := d["Size"].(int64)
	if size < 0 || size > x.maxObjects {
		return pdfStructErr("a cross-reference stream's Size %d is over %d", size, x.maxObjects)
	}
	index := pdfArray{int64(0), size}
	if a, ok := d["Index"].(pdfArray); ok {
		index = a
	}
	w, _ := d["W"].(pdfArray)
	var widths []int
	total := 0
	for _, v := range w {
		n, ok := v.(int64)
		if !ok || n < 0 || n > 8 {
			return pdfStructErr("a cross-reference stream's W holds %v", v)
		}
		widths = append(widths, int(n))
		total += int(n)
	}
	if len(widths) < 3 || len(index)%2 != 0 {
		return nil // the library refuses it
	}
	raw, err := x.streamData(d, at)
	if err != nil {
		return err
	}
	for ; len(index) >= 2; index = index[2:] {
		first, ok1 := index[0].(int64)
		count, ok2 := index[1].(int64)
		if !ok1 || !ok2 || first < 0 || count < 0 || first > x.maxObjects-count {
			return pdfStructErr("a cross-reference stream numbers objects past %d", x.maxObjects)
		}
		if *entries += count; *entries > x.maxObjects {
			return pdfStructErr("more than %d cross-reference entries", x.maxObjects)
		}
		for i := range count {
			if len(raw) < total {
				return nil // the library stops here too
			}
			field := func(k int) int64 {
				v := int64(0)
				for _, c := range raw[:widths[k]] {
					v = v<<8 | int64(c)
				}
				raw = raw[widths[k]:]
				return v
			}
			kind := field(0)
			if widths[0] == 0 {
				kind = 1
			}
			f2, _ := field(1), field(2)
			switch kind {
			case 1:
				x.offsets = append(x.offsets, pdfOffset{first + i, f2})
			case 2:
				x.inStream = append(x.inStream, first+i)
				if x.containers[f2] = true; len(x.containers) > maxPDFObjectStreams {
					return pdfStructErr("more than %d object streams", maxPDFObjectStreams)
				}
			}
		}
	}
	return nil
}

// streamData decodes a stream whose data starts at at (Flate, with or
// without the PNG Up predictor, or no filter: what the library reads), at
// most maxPDFPageContent bytes of it.
func (x *pdfXref) streamData(d pdfDict, at int) ([]byte, error) {
	n, ok := d["Length"].(int64)
	if !ok || n < 0 || n > int64(len(x.data)-at) {
		return nil, pdfStructErr("a cross-reference stream's Length is not a number within the file")
	}
	var rd io.Reader = bytes.NewReader(x.data[at : at+int(n)])
	switch f := d["Filter"]; f {
	case nil:
	case pdfName("FlateDecode"):
		zr, err := zlib.NewReader(rd)
		if err != nil {
			return nil, pdfStructErr("a cross-reference stream: %v", err)
		}
		rd = zr
		if parms, ok := d["DecodeParms"].(pdfDict); ok && parms["Predictor"] != nil {
			cols, _ := parms["Columns"].(int64)
			if cols < 0 || cols > maxPDFColumns {
				return nil, pdfStructErr("a stream's predictor has %d columns", cols)
			}
			rd = &pngUp{r: rd, row: make([]byte, 1+cols), prev: make([]byte, 1+cols)}
		}
	default:
		return nil, pdfStructErr("a cross-reference stream's filter %v is not supported", f)
	}
	b, err := io.ReadAll(io.LimitReader(rd, maxPDFPageContent+1))
	if len(b) > maxPDFPageContent {
		return nil, pdfStructErr("a cross-reference stream inflates past %d bytes", maxPDFPageContent)
	}
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
		return nil, pdfStructErr("a cross-reference stream: %v", err)
	}
	return b, nil
}

// pngUp undoes the PNG Up predictor row by row.
type pngUp struct {
	r         io.Reader
	row, prev []byte
	pend      []byte
}

func (p *pngUp) Read(b []byte) (int, error) {
	for len(p.pend) == 0 {
		if _, err := io.ReadFull(p.r, p.row); err != nil {
			return 0, err
		}
		if p.row[0] != 2 {
			return 0, errors.New("malformed PNG-Up encoding")
		}
		for i := range p.row {
			p.prev[i] += p.row[i]
		}
		p.pend = p.prev[1:]
	}
	n := copy(b, p.pend)
	p.pend = p.pend[n:]
	return n, nil
}

// checkContainers checks the object streams the sections name: each is an
// object of its own (not in an object stream: the library would recurse
// without end), with N, First, Type, Filter, DecodeParms and Extends
// written in it (a reference among them could lead back into the stream),
// N within what its data can hold (the library reads N entries, also past
// the data's end), and Extends chains ending.
func (x *pdfXref) checkContainers() error {
	slices.SortFunc(x.offsets, func(a, b pdfOffset) int { return cmp.Compare(a.id, b.id) })
	slices.Sort(x.inStream)
	checked := map[int64]bool{}
	for c := range x.containers {
		seen := map[int64]bool{}
		for id := c; ; {
			if seen[id] {
				return pdfStructErr("object stream %d extends itself", id)
			}
			seen[id] = true
			if checked[id] {
				break
			}
			checked[id] = true
			next, err := x.container(id)
			if err != nil {
				return err
			}
			if next < 0 {
				break
			}
			id = next
		}
	}
	return nil
}

// container checks object stream id and returns the one it extends, or -1.
func (x *pdfXref) container(id int64) (int64, error) {
	if _, ok := slices.BinarySearch(x.inStream, id); ok {
		return 0, pdfStructErr("object stream %d is in an object stream", id)
	}
	i, _ := slices.BinarySearchFunc(x.offsets, id, func(e pdfOffset, id int64) int { return cmp.Compare(e.id, id) })
	for ; i < len(x.offsets) && x.offsets[i].id == id; i++ {
		off := x.offsets[i].off
		if off < 0 || off >= int64(len(x.data)) {
			continue // the library finds no object there
		}
		l := &pdfLex{data: x.data, pos: int(off)}
		obj, err := l.indirect()
		if err != nil {
			continue // nor here
		}
		d, ok := obj.value.(pdfDict)
		if !ok || obj.stream < 0 {
			continue
		}
		for _, k := range []pdfName{"Type", "N", "First", "Filter", "DecodeParms", "Extends"} {
			if pdfHasRef(d[k], k == "Extends") {
				return 0, pdfStructErr("object stream %d refers to an object for its %s", id, k)
			}
		}
		if _, ok := d["Length"].(pdfRef); ok {
			if _, in := slices.BinarySearch(x.inStream, d["Length"].(pdfRef).id); in {
				return 0, pdfStructErr("object stream %d's Length is in an object stream", id)
			}
		}
		if err := pdfCheckParms(d["DecodeParms"]); err != nil {
			return 0, err
		}
		n, _ := d["N"].(int64)
		length, _ := d["Length"].(int64)
		if length <= 0 {
			length = int64(len(x.data))
		}
		// an entry is at least "1 0 " decoded, and Flate inflates at
		// most 1032-fold
		most := length / 4
		if d["Filter"] != nil || x.encrypted {
			most = length * 258
		}
		if n < 0 || n > most+1 || n > x.maxObjects {
			return 0, pdfStructErr("object stream %d declares %d objects", id, n)
		}
		if ext, ok := d["Extends"].(pdfRef); ok {
			return ext.id, nil // checked next, as the chain's next stream
		}
	}
	return -1, nil
}

// pdfHasRef reports whether v holds a reference (the value itself only,
// when top is set: Extends is one).
func pdfHasRef(v any, top bool) bool {
	switch v := v.(type) {
	case pdfRef:
		return !top
	case pdfArray:
		for _, e := range v {
			if pdfHasRef(e, false) {
				return true
			}
		}
	case pdfDict:
		for _, e := range v {
			if pdfHasRef(e, false) {
				return true
			}
		}
	}
	return false
}

// pdfCheckParms refuses a predictor's Columns past maxPDFColumns in
// DecodeParms (a dictionary, or an array of them).
func pdfCheckParms(v any) error {
	var parms []pdfDict
	switch v := v.(type) {
	case pdfDict:
		parms = append(parms, v)
	case pdfArray:
		for _, e := range v {
			if d, ok := e.(pdfDict); ok {
				parms = append(parms, d)
			}
		}
	}
	for _, d := range parms {
		if c, ok := d["Columns"].(int64); ok && (c < 0 || c > maxPDFColumns) {
			return pdfStructErr("a stream's predictor has %d columns", c)
		}
	}
	return nil
}

// maxPDFOperands bounds the operands a content stream or CMap leaves on
// the library's stack at once: it keeps each (about 50 bytes and more),
// so 12 MB of "[1 2] " before one operator, a 19 KB PDF, took 400 MB.
const maxPDFOperands = 1 << 18

// pdfContentOps are the content stream operators: at one, the page walk
// takes every operand off the stack.
var pdfContentOps = func() map[string]bool {
	m := map[string]bool{}
	for _, op := range strings.Fields(`b B b* B* BDC BI BMC BT BX c cm CS cs d d0 d1 Do DP EI EMC ET EX f F f* G g gs h i ID j J K k l m M
		MP n q Q re RG rg ri s S SC sc SCN scn sh T* Tc Td TD Tf Tj TJ TL Tm Tr Ts Tw Tz v w W W* y ' "`) {
		m[op] = true
	}
	return m
}()

// pdfOperands counts the operands on the library's stack as it interprets
// decoded streams, from above: every token but an operator counts (a token
// the library fails on too), and only a content operator empties the
// stack, never after "begin" (a dictionary's definitions may make any name
// an operand) nor in a CMap (whose operators leave operands behind).
type pdfOperands struct {
	pending int
	cmap    bool
	begun   bool
}

func (o *pdfOperands) scan(data []byte) error {
	l := &pdfLex{data: data}
	for {
		tok, err := l.token()
		if tok == io.EOF {
			return nil
		}
		if kw, ok := tok.(pdfKeyword); ok && err == nil {
			if kw == "begin" {
				o.begun = true
			}
			if !o.cmap && !o.begun && pdfContentOps[string(kw)] {
				o.pending = 0
				continue
			}
		}
		if o.pending++; o.pending > maxPDFOperands {
			return fmt.Errorf("%w: pdf: more than %d operands at once in a content stream", ErrMalformed, maxPDFOperands)
		}
	}
}
