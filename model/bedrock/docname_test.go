package bedrock

import (
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
