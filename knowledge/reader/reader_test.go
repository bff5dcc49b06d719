package reader

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestRead_Formats(t *testing.T) {
	t.Parallel()
	cases := []struct {
		kind, in string
		want     []string
	}{
		{Text, "hello world", []string{"hello world"}},
		{Markdown, "# Title\nbody", []string{"# Title", "body"}},
		{HTML, "<html><body><h1>Title</h1><p>Some <b>bold</b> text</p><script>x()</script></body></html>", []string{"# Title", "**bold**"}},
		{CSV, "name,age\nada,36\nalan,41\n", []string{"name: ada, age: 36", "name: alan, age: 41"}},
		{JSON, `{"a":{"b":[1,"x"]},"c":true}`, []string{"a.b[0]: 1", "a.b[1]: x", "c: true"}},
		{JSON, `[{"q":"one"},{"q":"two"}]`, []string{"[0].q: one", "[1].q: two"}},
	}
	for _, c := range cases {
		got, err := Read(c.kind, []byte(c.in))
		if err != nil {
			t.Fatalf("%s: %v", c.kind, err)
		}
		for _, w := range c.want {
			if !strings.Contains(got, w) {
				t.Fatalf("%s: %q lacks %q", c.kind, got, w)
			}
		}
	}
}

func TestRead_BadInput(t *testing.T) {
	t.Parallel()
	cases := []struct {
		kind, in string
		want     error
	}{
		{Text, "", ErrEmpty},
		{Text, "  \n\t", ErrEmpty},
		{Text, "ok \xff\xfe bad", ErrInvalidUTF8},
		{HTML, "<p>\xff</p>", ErrInvalidUTF8},
		{HTML, "<script>only()</script>", ErrNoText},
		{JSON, `{"a":`, ErrMalformed},
		{JSON, `{} {}`, ErrMalformed},
		// a closer after the value is no value for Decoder.More, and was
		// taken for the end of the document
		{JSON, `{"a":1}]`, ErrMalformed},
		{JSON, "[1]\n}", ErrMalformed},
		{"xlsx", "x", ErrUnsupported},
	}
	for _, c := range cases {
		if _, err := Read(c.kind, []byte(c.in)); !errors.Is(err, c.want) {
			t.Fatalf("%s %q: err %v, want %v", c.kind, c.in, err, c.want)
		}
	}
}

func TestDetect(t *testing.T) {
	t.Parallel()
	cases := map[[2]string]string{
		{"a.md", ""}: Markdown, {"A.HTML", ""}: HTML, {"x", "text/csv; charset=utf-8"}: CSV,
		{"x.pdf", "text/plain"}: PDF, {"x.docx", ""}: DOCX, {"x.bin", ""}: Text, {"page", "text/html"}: HTML,
	}
	for in, want := range cases {
		if got := Detect(in[0], in[1]); got != want {
			t.Fatalf("Detect(%q, %q) = %s, want %s", in[0], in[1], got, want)
		}
	}
}

func FuzzRead(f *testing.F) {
	f.Add("json", []byte(`{"a":[1,{"b":null}]}`))
	f.Add("csv", []byte("a,b\n1,2\n"))
	f.Add("html", []byte("<h1>x</h1><table><tr><td>1</td></tr></table>"))
	f.Add("html", []byte(`<table role=none><tr><td rowspan=3 colspan=9>a<table><tr><th>b</th></tr></table></td></tr><tr></tr></table>`))
	f.Add("markdown", []byte("# x\n"))
	f.Add("pdf", minimalPDF("fuzz me"))
	f.Add("pdf", xrefStreamPDF("1 0", "/N 1", "", false))
	f.Add("docx", []byte("PK\x03\x04"))
	f.Add("pdf", []byte("%PDF-1.0\n00000000000000000\xb0"+strings.Repeat("0", 55)+"\nstartxref\n10%%EOF"))
	f.Fuzz(func(t *testing.T, kind string, data []byte) {
		text, err := Read(kind, data)
		if err == nil && strings.TrimSpace(text) == "" {
			t.Fatal("no error and no text")
		}
		// a failed insert's status message is the error's text
		if err != nil && (!utf8.ValidString(err.Error()) || strings.Contains(err.Error(), "\x00")) {
			t.Fatalf("error text %q", err.Error())
		}
	})
}

// CSV repeats the header in every row and JSON a leaf's path in every
// value, so a file of a megabyte could render to gigabytes of text; past
// maxRenderedText it is refused.
func TestRead_RenderingBombsRefused(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 100)
	header := strings.Repeat(long+",", 999) + long + "\n"
	csv := header + strings.Repeat(strings.Repeat(",", 999)+"\n", 1000)
	key := strings.Repeat("k", 100_000)
	json := `{"` + key + `":[` + strings.Repeat("0,", 999) + "0]}"
	for kind, data := range map[string]string{CSV: csv, JSON: json} {
		if len(data) > 2<<20 {
			t.Fatalf("%s: %d bytes: not a bomb", kind, len(data))
		}
		if text, err := Read(kind, []byte(data)); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: %d bytes of text from %d, err %v", kind, len(text), len(data), err)
		}
	}
}

// A PDF the library cannot parse fails with an error whose text is UTF-8
// without NUL, though the library quotes the bytes it stumbled on: a
// failed insert's status message holding them could not be stored, and the
// row stayed "processing" for good.
func TestRead_ErrorTextIsCleanUTF8(t *testing.T) {
	t.Parallel()
	_, err := Read(PDF, []byte("%PDF-1.0\n00000000000000000\xb0"+strings.Repeat("0", 55)+"\nstartxref\n10%%EOF"))
	if !errors.Is(err, ErrMalformed) || !utf8.ValidString(err.Error()) || strings.Contains(err.Error(), "\x00") {
		t.Fatalf("err %q", err)
	}
}

// A JSON value nested past maxJSONPathDepth keeps its text, as JSON on its
// path's line: it was written as "k.k.….k: …", its values lost.
func TestRead_DeepJSONKeepsItsValues(t *testing.T) {
	t.Parallel()
	in := strings.Repeat(`{"k":`, 70) + `{"name":"a<b needle","n":[1,2.5]}` + strings.Repeat(`}`, 70)
	out, err := Read(JSON, []byte(in))
	if err != nil || !strings.Contains(out, `{"n":[1,2.5],"name":"a<b needle"}}`) || strings.Contains(out, "…") {
		t.Fatalf("%q %v", out[max(0, len(out)-120):], err)
	}
}

// A CSV cell's line breaks are spaces in its record, as Agno's
// stringify_cell_value makes them: records are paragraphs, so a cell
// holding a blank line split its record in two, and a chunker put the
// part after it (without its column names) in a chunk of its own.
func TestRead_CSVMultilineCellsStayInTheirRecord(t *testing.T) {
	t.Parallel()
	in := "name,\"notes\r\nin full\"\nada,\"first line\n\nsecond line\r\nthird\"\nalan,short\n"
	got, err := Read(CSV, []byte(in))
	want := "name: ada, notes in full: first line second line third\n\nname: alan, notes in full: short\n\n"
	if err != nil || got != want {
		t.Fatalf("%q, %v; want %q", got, err, want)
	}
}
