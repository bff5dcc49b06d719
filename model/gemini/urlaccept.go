package gemini

import (
	"strings"

	"github.com/agentryhq/agentry/model"
)

// AcceptsURL: the Gemini API fetches external HTTPS (and signed) URLs in
// fileData for Gemini 3 models only, for images, PDFs and text documents
// (JSON, HTML, CSS, XML, plain text); older models, Vertex AI (which reads
// gs:// URIs) and audio or video get the bytes.
func (m *Model) AcceptsURL(t model.PartType, mimeType string) bool {
	if m.cfg.Vertex || !strings.HasPrefix(strings.ToLower(m.id), "gemini-3") {
		return false
	}
	mime, _, _ := strings.Cut(strings.ToLower(mimeType), ";")
	switch t {
	case model.PartImage:
		return true
	case model.PartFile:
		switch mime {
		case "application/pdf", "application/json", "text/html", "text/css", "text/xml", "application/xml", "text/plain":
			return true
		}
	}
	return false
}
