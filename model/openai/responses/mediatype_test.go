package responses

import (
	"context"
	"testing"

	"github.com/agentryhq/agentry/model"
)

// Media types are sent bare in data: URLs ("text/plain; charset=utf-8",
// what sniffing a text file gives, made a malformed data URL), image/jpg as
// image/jpeg.
func TestRequest_DataURLMediaTypesAreNormalised(t *testing.T) {
	t.Parallel()
	rec := newRecorder(t, "application/json", responseObj("completed", message("ok")))
	m, err := New(Config{APIKey: "sk", BaseURL: rec.URL, Model: "gpt-4o"})
	if err != nil {
		t.Fatal(err)
	}
	req := &model.Request{Messages: []model.Message{{Role: model.RoleUser, Parts: []model.Part{
		{Type: model.PartImage, Data: []byte("jpg"), MIMEType: " Image/JPG "},
		{Type: model.PartFile, Data: []byte("hello"), Name: "a.txt"},
		{Type: model.PartFile, Data: []byte("%PDF-1.4"), MIMEType: "Application/PDF; name=r.pdf", Name: "r.pdf"},
	}}}}
	if _, err := m.Invoke(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	assertJSON(t, rec.body(t, 0), `{"model":"gpt-4o","store":false,"input":[{"role":"user","content":[
		{"type":"input_image","image_url":"data:image/jpeg;base64,anBn","detail":"auto"},
		{"type":"input_file","file_data":"data:text/plain;base64,aGVsbG8=","filename":"a.txt"},
		{"type":"input_file","file_data":"data:application/pdf;base64,JVBERi0xLjQ=","filename":"r.pdf"}]}]}`)
}
