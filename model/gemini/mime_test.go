package gemini

import (
	"testing"

	"github.com/agentryhq/agentry/model"
)

// Gemini takes a bare MIME type it knows ("Unsupported MIME type" otherwise):
// a sniffed or fetched Content-Type loses its parameters, and image/jpg is
// sent as image/jpeg.
func TestMediaPart_MIMETypeIsOneGeminiTakes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		part model.Part
		want string
	}{
		{"sniffed text", model.Part{Type: model.PartFile, Data: []byte("plain notes\n")}, "text/plain"},
		{"fetched with charset", model.Part{Type: model.PartFile, Data: []byte("{}"), MIMEType: "application/json; charset=utf-8"}, "application/json"},
		{"jpg alias", model.Part{Type: model.PartImage, Data: []byte{0xff, 0xd8, 0xff}, MIMEType: "image/jpg"}, "image/jpeg"},
		{"upper case", model.Part{Type: model.PartImage, Data: []byte{1}, MIMEType: "Image/PNG"}, "image/png"},
		{"data URL with charset", model.Part{Type: model.PartFile, URL: "data:text/plain;charset=utf-8;base64,aGk="}, "text/plain"},
		{"file URL", model.Part{Type: model.PartImage, URL: "gs://b/x.png", MIMEType: "image/png; q=1"}, "image/png"},
	}
	for _, tc := range tests {
		p, err := mediaPart(&tc.part)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		got := ""
		switch {
		case p.InlineData != nil:
			got = p.InlineData.MIMEType
		case p.FileData != nil:
			got = p.FileData.MIMEType
		}
		if got != tc.want {
			t.Errorf("%s: mimeType %q, want %q", tc.name, got, tc.want)
		}
	}
}
