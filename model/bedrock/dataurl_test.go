package bedrock

import (
	"bytes"
	"testing"

	"github.com/agentryhq/agentry/model"
)

// A part given as a base64 data: URL (as the other providers take it) is
// sent as its bytes; a data: URL that is not base64 is a clear error.
func TestMediaBlock_DataURLIsSentAsBytes(t *testing.T) {
	t.Parallel()
	b, err := mediaBlock(&model.Part{Type: model.PartImage, URL: "data:image/png;base64,iVBORw0KGgo="})
	if err != nil {
		t.Fatal(err)
	}
	if b.Image == nil || b.Image.Format != "png" || !bytes.Equal(b.Image.Source.Bytes, []byte("\x89PNG\r\n\x1a\n")) {
		t.Fatalf("image block %+v", b.Image)
	}
	d, err := mediaBlock(&model.Part{Type: model.PartFile, URL: "data:application/pdf;base64,JVBERi0xLjQ=", Name: "r.pdf"})
	if err != nil {
		t.Fatal(err)
	}
	if d.Document == nil || d.Document.Format != "pdf" || string(d.Document.Source.Bytes) != "%PDF-1.4" {
		t.Fatalf("document block %+v", d.Document)
	}
	for _, u := range []string{"data:image/png,rawbytes", "data:image/png;base64,!!!"} {
		if _, err := mediaBlock(&model.Part{Type: model.PartImage, URL: u}); err == nil {
			t.Errorf("%q: no error", u)
		}
	}
}
