// Package reader turns a document's bytes into text a knowledge base can
// chunk: plain text, Markdown, HTML (converted to Markdown), CSV, JSON, and
// PDF through a maintained library and DOCX through encoding/xml. Every
// reader refuses empty input, text that is not UTF-8, and documents with no
// text.
package reader

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"path/filepath"
	"sort"
	"strings"
	"unicode/utf8"
)

// Sentinel errors; a failed insert's status message starts with their text.
var (
	ErrEmpty       = errors.New("reader: the document is empty")
	ErrInvalidUTF8 = errors.New("reader: the document is not valid UTF-8 text")
	ErrNoText      = errors.New("reader: the document has no extractable text")
	ErrUnsupported = errors.New("reader: unsupported document type")
	ErrMalformed   = errors.New("reader: malformed document")
)

// Kinds of document, as the reader ids /knowledge/config lists.
const (
	Text     = "text"
	Markdown = "markdown"
	HTML     = "html"
	CSV      = "csv"
	JSON     = "json"
	PDF      = "pdf"
	DOCX     = "docx"
)

// Kinds lists the readers in a stable order.
func Kinds() []string { return []string{Text, Markdown, HTML, CSV, JSON, PDF, DOCX} }

// Detect picks the reader for a file name and content type (the name's
// extension first); it falls back to Text.
func Detect(name, contentType string) string {
	switch strings.ToLower(filepath.Ext(name)) {
	case ".md", ".markdown", ".mdx":
		return Markdown
	case ".html", ".htm", ".xhtml":
		return HTML
	case ".csv":
		return CSV
	case ".json":
		return JSON
	case ".pdf":
		return PDF
	case ".docx":
		return DOCX
	case ".txt", ".text", ".log":
		return Text
	}
	mt, _, _ := mime.ParseMediaType(contentType)
	switch mt {
	case "text/markdown", "text/x-markdown":
		return Markdown
	case "text/html", "application/xhtml+xml":
		return HTML
	case "text/csv":
		return CSV
	case "application/json":
		return JSON
	case "application/pdf":
		return PDF
	case "application/vnd.openxmlformats-officedocument.wordprocessingml.document":
		return DOCX
	}
	return Text
}

// MIME is the content type recorded for a kind.
func MIME(kind string) string {
	return map[string]string{Text: "text/plain", Markdown: "text/markdown", HTML: "text/html", CSV: "text/csv", JSON: "application/json",
		PDF: "application/pdf", DOCX: "application/vnd.openxmlformats-officedocument.wordprocessingml.document"}[kind]
}

// Read extracts the text of data as kind.
func Read(kind string, data []byte) (string, error) {
	if kind != PDF && kind != DOCX {
		// a UTF-8 byte order mark (Notepad, Excel's "CSV UTF-8") is not
		// text: JSON refuses it, and it would stick to a CSV's first
		// column name and hide a Markdown file's first heading
		data = bytes.TrimPrefix(data, []byte("\ufeff"))
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return "", ErrEmpty
	}
	var text string
	var err error
	switch kind {
	case Text, Markdown:
		if !utf8.Valid(data) {
			return "", ErrInvalidUTF8
		}
		text = string(data)
	case HTML:
		if !utf8.Valid(data) {
			return "", ErrInvalidUTF8
		}
		text, err = readHTML(data)
	case CSV:
		text, err = readCSV(data)
	case JSON:
		text, err = readJSON(data)
	case PDF:
		text, err = readPDF(data)
	case DOCX:
		text, err = readDOCX(data)
	default:
		return "", fmt.Errorf("%w: %q (use one of %s)", ErrUnsupported, kind, strings.Join(Kinds(), ", "))
	}
	if err != nil {
		return "", cleanText(err)
	}
	text = strings.ToValidUTF8(strings.ReplaceAll(text, "\x00", ""), "")
	if strings.TrimSpace(text) == "" {
		return "", ErrNoText
	}
	return text, nil
}

// textError is an error whose text is cleaned of what a status message
// cannot hold.
type textError struct {
	err  error
	text string
}

func (e *textError) Error() string { return e.text }
func (e *textError) Unwrap() error { return e.err }

// cleanText returns err with its text valid UTF-8 without NUL: the PDF
// library quotes the bytes it stumbled on, and a failed insert's status
// message holding them could not be stored (the row stayed "processing").
func cleanText(err error) error {
	msg := err.Error()
	if utf8.ValidString(msg) && !strings.Contains(msg, "\x00") {
		return err
	}
	return &textError{err: err, text: strings.ToValidUTF8(strings.ReplaceAll(msg, "\x00", ""), "\uFFFD")}
}

// maxRenderedText bounds the text a CSV or JSON document renders to: every
// row repeats the header and every value its path, so a file of a megabyte
// could otherwise render to gigabytes.
const maxRenderedText = 64 << 20

func tooMuchText(kind string) error {
	return fmt.Errorf("%w: %s: renders to more than %d bytes of text", ErrMalformed, kind, maxRenderedText)
}

// readCSV renders each record as "column: value" pairs under the header.
func readCSV(data []byte) (string, error) {
	if !utf8.Valid(data) {
		return "", ErrInvalidUTF8
	}
	r := csv.NewReader(bytes.NewReader(data))
	r.FieldsPerRecord = -1
	r.LazyQuotes = true
	header, err := r.Read()
	if err != nil {
		return "", fmt.Errorf("%w: csv: %v", ErrMalformed, err)
	}
	var b strings.Builder
	for {
		rec, err := r.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return "", fmt.Errorf("%w: csv: %v", ErrMalformed, err)
		}
		for i, v := range rec {
			if i > 0 {
				b.WriteString(", ")
			}
			col := fmt.Sprintf("column %d", i+1)
			if i < len(header) && strings.TrimSpace(header[i]) != "" {
				col = oneLine(strings.TrimSpace(header[i]))
			}
			v = oneLine(v)
			if b.Len()+len(col)+len(v) > maxRenderedText {
				return "", tooMuchText("csv")
			}
			b.WriteString(col + ": " + v)
		}
		b.WriteString("\n\n")
	}
	if b.Len() == 0 { // a header alone is the only text
		return oneLine(strings.Join(header, ", ")), nil
	}
	return b.String(), nil
}

// oneLine turns each run of line breaks in a CSV cell into a space, as
// Agno does: a record is a paragraph, and a blank line in a cell split it
// in two for the chunkers.
func oneLine(s string) string {
	if !strings.ContainsAny(s, "\r\n") {
		return s
	}
	return strings.Join(strings.FieldsFunc(s, func(r rune) bool { return r == '\r' || r == '\n' }), " ")
}

// readJSON renders a JSON document as "path: value" lines; an array's
// items are separated by blank lines so chunkers keep each item together.
func readJSON(data []byte) (string, error) {
	if !utf8.Valid(data) {
		return "", ErrInvalidUTF8
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return "", fmt.Errorf("%w: json: %v", ErrMalformed, err)
	}
	// not dec.More: a "]" or "}" after the value is no more to it
	if len(bytes.Trim(data[dec.InputOffset():], " \t\r\n")) > 0 {
		return "", fmt.Errorf("%w: json: more than one value", ErrMalformed)
	}
	var b strings.Builder
	ok := true
	if arr, isArr := v.([]any); isArr {
		for i, item := range arr {
			if ok = flatten(&b, fmt.Sprintf("[%d]", i), item, 0); !ok {
				break
			}
			b.WriteString("\n")
		}
	} else {
		ok = flatten(&b, "", v, 0)
	}
	if !ok {
		return "", tooMuchText("json")
	}
	return b.String(), nil
}

// maxJSONPathDepth bounds the path a JSON value's line names: each level
// copies the path, so a chain thousands deep would copy it thousands of
// times. A value deeper down is written as JSON on its path's line.
const maxJSONPathDepth = 64

// flatten writes v's "path: value" lines; false when they would pass
// maxRenderedText.
func flatten(b *strings.Builder, path string, v any, depth int) bool {
	if b.Len()+len(path) > maxRenderedText {
		return false
	}
	if depth > maxJSONPathDepth {
		// its text stays (it was "path: …", the values lost)
		var raw bytes.Buffer
		enc := json.NewEncoder(&raw)
		enc.SetEscapeHTML(false) // "a<b" stays searchable as itself
		_ = enc.Encode(v)        // decoded from JSON: it encodes; Encode ends the line
		if b.Len()+len(path)+raw.Len() > maxRenderedText {
			return false
		}
		b.WriteString(path + ": ")
		b.Write(raw.Bytes())
		return true
	}
	switch x := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			p := k
			if path != "" {
				p = path + "." + k
			}
			if !flatten(b, p, x[k], depth+1) {
				return false
			}
		}
	case []any:
		for i, item := range x {
			if !flatten(b, fmt.Sprintf("%s[%d]", path, i), item, depth+1) {
				return false
			}
		}
	case nil:
	default:
		s := fmt.Sprint(x)
		if b.Len()+len(path)+len(s) > maxRenderedText {
			return false
		}
		if path != "" {
			b.WriteString(path + ": ")
		}
		b.WriteString(s + "\n")
	}
	return true
}
