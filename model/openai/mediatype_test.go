package openai_test

import (
	"context"
	"testing"

	"github.com/agentryhq/agentry/model"
)

// Media types are sent bare, trimmed and in lower case in data: URLs
// ("text/plain; charset=utf-8", what sniffing a text file gives, made a
// malformed data URL), image/jpg as image/jpeg.
func TestRequest_DataURLMediaTypesAreNormalised(t *testing.T) {
	t.Parallel()
	f := newFake(t, reply{body: completion})
	req := &model.Request{Messages: []model.Message{{
		Role: model.RoleUser,
		Parts: []model.Part{
			{Type: model.PartImage, Data: []byte("jpg"), MIMEType: " Image/JPG "},
			{Type: model.PartImage, Data: []byte("png"), MIMEType: "image/png; name=x.png"},
			{Type: model.PartFile, Data: []byte("hello"), Name: "a.txt"}, // sniffed: text/plain; charset=utf-8
			{Type: model.PartAudio, Data: []byte("RIFF0000WAVE"), MIMEType: "Audio/WAV; codecs=1"},
		},
	}}}
	if _, err := newModel(t, f).Invoke(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	assertJSON(t, field(t, f.only().body, "messages"), `[{"role":"user","content":[
		{"type":"image_url","image_url":{"url":"data:image/jpeg;base64,anBn"}},
		{"type":"image_url","image_url":{"url":"data:image/png;base64,cG5n"}},
		{"type":"file","file":{"file_data":"data:text/plain;base64,aGVsbG8=","filename":"a.txt"}},
		{"type":"input_audio","input_audio":{"data":"UklGRjAwMDBXQVZF","format":"wav"}}
	]}]`)
}
