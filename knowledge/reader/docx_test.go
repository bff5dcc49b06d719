package reader

import (
	"archive/zip"
	"bytes"
	"encoding/xml"
	"errors"
	"runtime"
	"strings"
	"testing"
)

// docxOf is a DOCX whose main document body is body (WordprocessingML with
// the w prefix), found through the package relationships at part.
func docxOf(t testing.TB, part, body string) []byte {
	t.Helper()
	var b bytes.Buffer
	z := zip.NewWriter(&b)
	files := map[string]string{
		"[Content_Types].xml": `<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">` +
			`<Override PartName="/` + part + `" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>`,
		"_rels/.rels": `<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">` +
			`<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="` + part + `"/></Relationships>`,
		part: `<?xml version="1.0" encoding="UTF-8"?><w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"` +
			` xmlns:mc="http://schemas.openxmlformats.org/markup-compatibility/2006"><w:body>` + body + `</w:body></w:document>`,
	}
	for name, content := range files {
		// stored: a repetitive test body would look like a zip bomb
		w, err := z.CreateHeader(&zip.FileHeader{Name: name, Method: zip.Store})
		if err != nil {
			t.Fatal(err)
		}
		w.Write([]byte(content))
	}
	if err := z.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func wp(text string) string {
	return `<w:p><w:r><w:t xml:space="preserve">` + text + `</w:t></w:r></w:p>`
}

// Every run's text is the document's wherever Word puts it. The library
// read before kept only paragraphs and tables directly in the body and
// runs directly in a paragraph: a hyperlink's text became "[](rId1)", a
// table cell kept its first paragraph only, and content controls (a
// template's fields, a table of contents), tracked insertions, smart tags,
// simple fields and nested tables vanished without an error (a document
// all inside one content control had "no extractable text").
func TestReadDOCX_TextWhereverWordPutsIt(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, body string
		want       []string
		not        []string
	}{
		{"hyperlink", `<w:p><w:hyperlink w:anchor="x"><w:r><w:t>link one</w:t></w:r><w:r><w:t xml:space="preserve"> link two</w:t></w:r></w:hyperlink></w:p>`,
			[]string{"link one link two"}, nil},
		{"content control in the body", `<w:sdt><w:sdtPr><w:alias w:val="Title"/></w:sdtPr><w:sdtContent>` + wp("in a content control") + `</w:sdtContent></w:sdt>`,
			[]string{"in a content control"}, nil},
		{"content control in a paragraph", `<w:p><w:sdt><w:sdtContent><w:r><w:t>inline control</w:t></w:r></w:sdtContent></w:sdt></w:p>`,
			[]string{"inline control"}, nil},
		{"tracked changes", `<w:p><w:r><w:t xml:space="preserve">kept </w:t></w:r><w:ins w:id="1" w:author="a"><w:r><w:t>inserted</w:t></w:r></w:ins>` +
			`<w:del w:id="2" w:author="a"><w:r><w:delText>deleted</w:delText></w:r></w:del></w:p>` +
			`<w:p><w:moveFrom w:id="3" w:author="a"><w:r><w:t>moved away</w:t></w:r></w:moveFrom><w:moveTo w:id="4" w:author="a"><w:r><w:t>moved here</w:t></w:r></w:moveTo></w:p>`,
			[]string{"kept inserted", "moved here"}, []string{"deleted", "moved away"}},
		{"smart tag, field and custom XML", `<w:p><w:smartTag w:uri="x" w:element="place"><w:r><w:t>Paris</w:t></w:r></w:smartTag></w:p>` +
			`<w:p><w:fldSimple w:instr="DATE"><w:r><w:t>1 May</w:t></w:r></w:fldSimple></w:p>` +
			`<w:customXml w:element="x">` + wp("custom part") + `</w:customXml>`,
			[]string{"Paris", "1 May", "custom part"}, []string{"DATE"}},
		{"table cells with paragraphs and a nested table", `<w:tbl><w:tr><w:tc>` + wp("region") + `</w:tc><w:tc>` + wp("notes") + `</w:tc></w:tr>` +
			`<w:tr><w:tc>` + wp("north") + wp("and coast") + `</w:tc><w:tc><w:tbl><w:tr><w:tc>` + wp("nested a|b") + `</w:tc></w:tr></w:tbl><w:p/></w:tc></w:tr></w:tbl>`,
			[]string{"| region | notes |\n| --- | --- |\n| north and coast | nested a\\|b |"}, nil},
		{"text box once", `<w:p><w:r><w:t xml:space="preserve">caption </w:t></w:r><w:r><mc:AlternateContent><mc:Choice Requires="wps"><w:drawing><w:txbxContent>` +
			wp("boxed") + `</w:txbxContent></w:drawing></mc:Choice><mc:Fallback><w:pict><w:txbxContent>` + wp("boxed") + `</w:txbxContent></w:pict></mc:Fallback></mc:AlternateContent></w:r></w:p>`,
			[]string{"caption boxed"}, []string{"boxed boxed"}},
		{"breaks and tabs", `<w:p><w:r><w:t>one</w:t><w:br/><w:t>two</w:t><w:tab/><w:t>three</w:t></w:r></w:p>`, []string{"one\ntwo\tthree"}, nil},
		// a paragraph's tab stops are w:tab elements too: not text
		{"tab stops", `<w:p><w:pPr><w:tabs><w:tab w:val="left" w:pos="720"/></w:tabs></w:pPr><w:r><w:rPr><w:b/></w:rPr><w:t>Heading</w:t></w:r></w:p>`,
			[]string{"Heading\n\n"}, []string{"\tHeading"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := Read(DOCX, docxOf(t, "word/document.xml", tt.body))
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tt.want {
				if !strings.Contains(got, w) {
					t.Errorf("text %q lacks %q", got, w)
				}
			}
			for _, n := range tt.not {
				if strings.Contains(got, n) {
					t.Errorf("text %q holds %q", got, n)
				}
			}
		})
	}
}

// The main document part is the one the package relationships name; a
// package without one is malformed.
func TestReadDOCX_MainPartFromRelationships(t *testing.T) {
	t.Parallel()
	got, err := Read(DOCX, docxOf(t, "word/document2.xml", wp("elsewhere")))
	if err != nil || !strings.Contains(got, "elsewhere") {
		t.Fatalf("%q %v", got, err)
	}
	var b bytes.Buffer
	z := zip.NewWriter(&b)
	w, _ := z.Create("word/styles.xml")
	w.Write([]byte("<styles/>"))
	z.Close()
	if _, err := Read(DOCX, b.Bytes()); !errors.Is(err, ErrMalformed) {
		t.Fatalf("a zip without a document: %v", err)
	}
	if _, err := Read(DOCX, docxOf(t, "word/document.xml", "<w:p><w:r><w:t>unclosed")); !errors.Is(err, ErrMalformed) {
		t.Fatalf("broken XML: %v", err)
	}
}

// Tables and text boxes nested deeper than maxDocxNesting keep their text,
// read into the one at the bound, and no more than maxDocxNesting of them
// are open at once: each open one copied the text inside it into its
// container when it closed, so nesting 20,000 deep took minutes. A table
// of empty rows under a wide first row rendered every row as wide.
func TestReadDOCX_DeepNestingAndWideTables(t *testing.T) {
	t.Parallel()
	const depth = 200
	body := strings.Repeat("<w:tbl><w:tr><w:tc>", depth) + wp("deep words") + strings.Repeat("</w:tc></w:tr></w:tbl>", depth) +
		strings.Repeat("<w:p><w:r><w:t>Z</w:t></w:r>", depth) + strings.Repeat("</w:p>", depth)
	got, err := Read(DOCX, docxOf(t, "word/document.xml", body))
	if err != nil || !strings.Contains(got, "deep words") || strings.Count(got, "Z") != depth {
		t.Fatalf("%q, err %v", got, err)
	}
	// the open containers, at their deepest (the document never closes)
	w := &docxWalker{}
	open := strings.Repeat("<w:tbl><w:tr><w:tc>", depth) + strings.Repeat("<w:p><w:r><w:t>Z</w:t></w:r>", depth)
	if err := w.walk(xml.NewDecoder(strings.NewReader(`<w:body xmlns:w="w">` + open))); !errors.Is(err, ErrMalformed) {
		t.Fatalf("an unclosed document: %v", err)
	}
	if n := max(len(w.tables), len(w.paras)); n > maxDocxNesting || n >= depth {
		t.Fatalf("%d tables and %d paragraphs open at once", len(w.tables), len(w.paras))
	}
	wide := "<w:tbl><w:tr>" + strings.Repeat("<w:tc/>", 3000) + "</w:tr>" + strings.Repeat("<w:tr/>", 3000) + wp("after") + "</w:tbl>"
	got, err = Read(DOCX, docxOf(t, "word/document.xml", wide))
	if err != nil || len(got) > 2*len(wide) || !strings.Contains(got, "after") {
		t.Fatalf("%d bytes of text from %d bytes of XML, err %v", len(got), len(wide), err)
	}
}

// FuzzDocxWalk feeds the WordprocessingML walk any XML: it returns, fails
// only as ErrMalformed, and renders at most about twice the input.
func FuzzDocxWalk(f *testing.F) {
	f.Add(`<w:tbl><w:tr><w:tc>` + wp("a") + `<w:tbl><w:tr><w:tc>` + wp("b") + `</w:tc></w:tr></w:tbl></w:tc></w:tr></w:tbl>`)
	f.Add(`<w:p><w:r><w:t>x</w:t></w:r><w:p><w:t>y</w:t></w:p></w:p><w:tc>` + wp("z") + `</w:tc></w:tr>`)
	f.Add(`<w:sdt><w:sdtPr><w:t>p</w:t></w:sdtPr><w:sdtContent>` + wp("q") + `</w:sdtContent></w:sdt><w:del>` + wp("r") + `</w:del>`)
	f.Add(`<w:tbl><w:tr><w:tc/><w:tc/></w:tr><w:tr/><w:tr><w:tc><w:t>|</w:t></w:tc></w:tr></w:tbl>`)
	f.Fuzz(func(t *testing.T, body string) {
		w := &docxWalker{}
		err := w.walk(xml.NewDecoder(strings.NewReader("<w:body xmlns:w=\"w\">" + body + "</w:body>")))
		if err != nil && !errors.Is(err, ErrMalformed) {
			t.Fatalf("err %v is not ErrMalformed", err)
		}
		if n := w.out.Len(); n > 2*len(body)+64 {
			t.Fatalf("%d bytes of text from %d bytes of XML", n, len(body))
		}
	})
}

// XML nested a million deep is malformed, refused before the decoder has
// held all of it open: encoding/xml keeps a stack entry (about 190 bytes)
// per open element, so 15 MB of "<w:sdt>" took 200 MB, and a DOCX's
// 64 MB part, compressed within the zip-bomb ratio to 320 KB, nearly 2 GB.
func TestReadDOCX_DeepXMLRefused(t *testing.T) {
	const depth = 1 << 20
	// read, and skipped (deleted text)
	for _, tag := range []string{"sdt", "del"} {
		body := strings.Repeat("<w:"+tag+">", depth) + wp("deep") + strings.Repeat("</w:"+tag+">", depth)
		data := docxOf(t, "word/document.xml", body)
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, err := Read(DOCX, data)
		runtime.ReadMemStats(&after)
		if alloc := after.TotalAlloc - before.TotalAlloc; !errors.Is(err, ErrMalformed) || alloc > 64<<20 {
			t.Fatalf("%s: %d MB allocated, err %v", tag, alloc>>20, err)
		}
	}
}
