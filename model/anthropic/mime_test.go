package anthropic

import (
	"testing"

	"github.com/agentryhq/agentry/model"
)

// The Messages API takes an image's media_type only as one of image/jpeg,
// image/png, image/gif and image/webp, spelled so (400 otherwise): a type
// an upload or a data: URL gave as the common alias image/jpg, in capitals
// or with parameters is sent as the API spells it.
func TestMediaSource_MediaTypeIsOneTheAPITakes(t *testing.T) {
	t.Parallel()
	jpeg := []byte("\xff\xd8\xff\xe0\x00\x10JFIF")
	tests := []struct {
		name string
		part model.Part
		want string
	}{
		{"jpg alias", model.Part{Type: model.PartImage, Data: jpeg, MIMEType: "image/jpg"}, "image/jpeg"},
		{"upper case with parameters", model.Part{Type: model.PartImage, Data: pngBytes, MIMEType: " Image/PNG; q=1"}, "image/png"},
		{"data URL jpg alias", model.Part{Type: model.PartImage, URL: "data:image/JPG;base64,/9j/4A=="}, "image/jpeg"},
		{"pdf in capitals", model.Part{Type: model.PartFile, Data: []byte("%PDF-1.7\n"), MIMEType: "Application/PDF"}, "application/pdf"},
	}
	for _, tc := range tests {
		b, err := partBlock(tc.part)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		sb, ok := b.(sourceBlock)
		if !ok {
			t.Fatalf("%s: block %T, want a source block", tc.name, b)
		}
		if sb.Source.MediaType != tc.want {
			t.Errorf("%s: media_type %q, want %q", tc.name, sb.Source.MediaType, tc.want)
		}
	}
}
