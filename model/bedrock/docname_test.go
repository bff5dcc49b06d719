package bedrock

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/model"
)

// Converse takes document names of letters, digits, hyphens, parentheses,
// square brackets and single whitespace characters; a file name with runs of
// spaces (or spaces left at an edge by dropped characters) is made into one
// it takes.
func TestMediaBlock_DocumentNameIsOneConverseTakes(t *testing.T) {
	t.Parallel()
	for name, want := range map[string]string{
		"Q3 report.pdf":                   "Q3 report",
		"Q3  report (final).pdf":          "Q3 report (final)",
		"_ notes _.pdf":                   "notes",
		"a\t\tb.pdf":                      "a b",
		"___.pdf":                         "document",
		strings.Repeat("x", 300) + ".pdf": strings.Repeat("x", 200),
	} {
		b, err := mediaBlock(&model.Part{Type: model.PartFile, Data: []byte("%PDF-1.4"), MIMEType: "application/pdf", Name: name})
		if err != nil {
			t.Fatal(err)
		}
		if b.Document == nil || b.Document.Name != want {
			t.Errorf("document name for %q = %q, want %q", name, b.Document.Name, want)
		}
	}
}

// Converse refuses a request whose documents share a name ("Messages can't
// contain duplicate document names"), across all its turns: two unnamed
// files, or the same file attached again later, get names of their own.
func TestRequest_DocumentNamesAreUniqueInTheRequest(t *testing.T) {
	t.Parallel()
	rec := newRecorder(t, "application/json", []byte(`{"output":{"message":{"role":"assistant","content":[{"text":"ok"}]}},"stopReason":"end_turn"}`))
	m := newTestModel(t, rec.URL, model.Params{})
	pdf := func(name string) model.Part {
		return model.Part{Type: model.PartFile, Data: []byte("%PDF-1.4"), MIMEType: "application/pdf", Name: name}
	}
	req := &model.Request{Messages: []model.Message{
		{Role: model.RoleUser, Content: "compare", Parts: []model.Part{pdf(""), pdf(""), pdf("Report.pdf")}},
		model.Text(model.RoleAssistant, "done"),
		{Role: model.RoleUser, Content: "and this", Parts: []model.Part{pdf("report.docx"), pdf("document-2.pdf")}},
	}}
	if _, err := m.Invoke(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	var body struct {
		Messages []struct {
			Content []struct {
				Document *struct {
					Name string `json:"name"`
				} `json:"document"`
			} `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(rec.last(t), &body); err != nil {
		t.Fatal(err)
	}
	var names []string
	seen := map[string]bool{}
	for _, msg := range body.Messages {
		for _, b := range msg.Content {
			if b.Document == nil {
				continue
			}
			names = append(names, b.Document.Name)
			if seen[strings.ToLower(b.Document.Name)] {
				t.Errorf("document name %q sent twice (names %q)", b.Document.Name, names)
			}
			seen[strings.ToLower(b.Document.Name)] = true
		}
	}
	if len(names) != 5 || names[0] != "document" || names[2] != "Report" {
		t.Errorf("names %q: the first of each name is kept as it is", names)
	}
}
