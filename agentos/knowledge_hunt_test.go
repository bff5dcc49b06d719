package agentos

import (
	"bytes"
	"context"
	"mime/multipart"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/embedder/local"
	"github.com/agentryhq/agentry/knowledge"
	"github.com/agentryhq/agentry/vectordb/embedded"
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
			e := local.New(local.Config{Dimensions: 64})
			vs, err := embedded.Open(context.Background(), embedded.Config{Path: filepath.Join(t.TempDir(), "v.db"), Dimensions: 64, EmbedderID: e.ID()})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { vs.Close() })
			k, err := knowledge.New(knowledge.Config{Name: "kb", DB: d, Vectors: vs, Embedder: e})
			if err != nil {
				t.Fatal(err)
			}
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
