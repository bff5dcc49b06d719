package anthropic

import (
	"strings"

	"github.com/agentryhq/agentry/model"
)

// AcceptsURL: the Messages API takes images (JPEG, PNG, GIF, WebP) and PDF
// documents as url sources; plain-text documents go inline, and other
// kinds are not supported at all.
func (m *Model) AcceptsURL(t model.PartType, mimeType string) bool {
	mime, _, _ := strings.Cut(strings.ToLower(mimeType), ";")
	switch t {
	case model.PartImage:
		return mime == "" || mime == "image/jpeg" || mime == "image/png" || mime == "image/gif" || mime == "image/webp"
	case model.PartFile:
		return mime == "application/pdf"
	}
	return false
}
