package agentos

import (
	"bytes"
	"context"
	"fmt"
	"mime/multipart"
	"net/url"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/knowledge"
)

// TestKnowledgeForms_NULOrNonUTF8FieldIs422: an upload or a PATCH whose
// name, description, metadata or text_content held a NUL was a 500 on
// Postgres (the content row cannot store it) and stored as given on
// SQLite; text_content that is not UTF-8 was accepted (202) and failed
// later. Each is now a 422 naming the field, on every database, and no
// content is stored; text with an escaped backslash before "u0000" is
// stored.
func TestKnowledgeForms_NULOrNonUTF8FieldIs422(t *testing.T) {
	t.Parallel()
	for name, open := range sqliteAndPostgres {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			d := open(t)
			k := testKnowledge(t, d, 0)
			ts, _ := testServer(t, Config{DBs: []*db.DB{d}, Knowledge: []*knowledge.Knowledge{k}}, nil)
			send := func(method, path string, fields map[string]string) response {
				var buf bytes.Buffer
				mw := multipart.NewWriter(&buf)
				for k, v := range fields {
					if err := mw.WriteField(k, v); err != nil {
						t.Fatal(err)
					}
				}
				if err := mw.Close(); err != nil {
					t.Fatal(err)
				}
				return do(t, method, ts.URL+path, &buf, map[string]string{"Content-Type": mw.FormDataContentType()})
			}
			kept, err := k.Insert(context.Background(), knowledge.Content{Text: "kettle handbook", Name: "handbook"})
			if err != nil {
				t.Fatal(err)
			}
			for _, tt := range []struct {
				fields map[string]string
				field  string
			}{
				{map[string]string{"text_content": "hello", "name": "a\x00b"}, `"name"`},
				{map[string]string{"text_content": "hello", "description": "d\x00"}, `"description"`},
				{map[string]string{"text_content": "hello", "metadata": "x\x00"}, `"metadata"`},
				{map[string]string{"text_content": "hello", "metadata": `{"a":"\u0000"}`}, "metadata"},
				{map[string]string{"text_content": "he\x00llo"}, `"text_content"`},
				{map[string]string{"text_content": "caf\xe9"}, `"text_content"`},
				{map[string]string{"text_content": "hello", "name": "caf\xe9"}, `"name"`},
			} {
				res := send("POST", "/knowledge/content", tt.fields)
				if res.status != 422 || !strings.Contains(res.detail(t), tt.field) {
					t.Errorf("upload %q = %d %s, want 422 naming %s", tt.fields, res.status, res.body, tt.field)
				}
				if res := send("PATCH", "/knowledge/content/"+kept.Content.ID, tt.fields); res.status != 422 {
					t.Errorf("patch %q = %d %s, want 422", tt.fields, res.status, res.body)
				}
			}
			list := get(t, ts.URL+"/knowledge/content", nil)
			if page := decode[paginated[contentView]](t, list); page.Meta.TotalCount != 1 || *page.Data[0].Name != "handbook" {
				t.Errorf("content after the bad forms = %s, want the handbook only, unchanged", list.body)
			}
			if res := send("POST", "/knowledge/content", map[string]string{"text_content": `C:\u0000 drive`, "metadata": `{"path":"C:\\u0000"}`}); res.status != 202 {
				t.Errorf("upload with escaped backslashes = %d %s", res.status, res.body)
			}
		})
	}
}

// TestKnowledgeUpload_RepeatedPartsAndQueryFieldsAreRefused: an upload with
// two files, or a field given twice, was a 202 that ingested the first and
// dropped the rest unsaid; the form fields were also read from the URL
// query, past the body's checks (a JSON url holding an escaped NUL was
// accepted), and a query alone made content; a PATCH giving a field twice
// applied the first. Repeats are now a 422 and nothing is stored or changed; the fields are the body's only, as Agno's Form fields.
func TestKnowledgeUpload_RepeatedPartsAndQueryFieldsAreRefused(t *testing.T) {
	t.Parallel()
	for name, open := range sqliteAndPostgres {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			d := open(t)
			k := testKnowledge(t, d, 0)
			ts, _ := testServer(t, Config{DBs: []*db.DB{d}, Knowledge: []*knowledge.Knowledge{k}}, nil)
			send := func(query string, fields [][2]string, files ...string) response {
				var buf bytes.Buffer
				mw := multipart.NewWriter(&buf)
				for _, kv := range fields {
					if err := mw.WriteField(kv[0], kv[1]); err != nil {
						t.Fatal(err)
					}
				}
				for i, content := range files {
					w, err := mw.CreateFormFile("file", fmt.Sprint("f", i, ".txt"))
					if err != nil {
						t.Fatal(err)
					}
					w.Write([]byte(content))
				}
				if err := mw.Close(); err != nil {
					t.Fatal(err)
				}
				return do(t, "POST", ts.URL+"/knowledge/content"+query, &buf, map[string]string{"Content-Type": mw.FormDataContentType()})
			}
			for _, tt := range []struct {
				name   string
				res    response
				status int
				detail string
			}{
				{"two files", send("", nil, "first file", "second file"), 422, "one file"},
				{"text_content twice", send("", [][2]string{{"text_content", "one"}, {"text_content", "two"}}), 422, "text_content"},
				{"name twice", send("", [][2]string{{"text_content", "one"}, {"name", "a"}, {"name", "b"}}), 422, "name"},
				{"text_content in the query only", send("?text_content=fromquery", nil), 400, "exactly one"},
				{"url with a NUL in the query only", send("?url="+url.QueryEscape(`["http://x/\u0000"]`), nil), 400, "exactly one"},
			} {
				if tt.res.status != tt.status || !strings.Contains(tt.res.detail(t), tt.detail) {
					t.Errorf("%s = %d %s, want %d naming %q", tt.name, tt.res.status, tt.res.body, tt.status, tt.detail)
				}
			}
			rows, total, err := d.ListKnowledgeContents(context.Background(), db.KnowledgeFilter{Limit: 10, Page: 1})
			if err != nil || total != 0 {
				t.Errorf("content after the refused uploads = %+v (%d), %v; want none", rows, total, err)
			}
			res := send("?name=fromquery", [][2]string{{"text_content", "body text"}})
			if res.status != 202 {
				t.Fatalf("upload with a query field = %d %s", res.status, res.body)
			}
			v := decode[contentView](t, res)
			if v.Name == nil || *v.Name != "body text" {
				t.Errorf("upload named %v, want the body's text (the query's name is not a form field)", v.Name)
			}
			patch := do(t, "PATCH", ts.URL+"/knowledge/content/"+v.ID, strings.NewReader("name=a&name=b"),
				map[string]string{"Content-Type": "application/x-www-form-urlencoded"})
			if patch.status != 422 || !strings.Contains(patch.detail(t), "name") {
				t.Errorf("PATCH with name twice = %d %s, want 422", patch.status, patch.body)
			}
			if c, err := d.GetKnowledgeContent(context.Background(), v.ID); err != nil || c.Name != "body text" {
				t.Errorf("content after the refused PATCH = %+v, %v; want its name kept", c, err)
			}
		})
	}
}
