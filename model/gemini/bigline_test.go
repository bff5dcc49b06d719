package gemini

import (
	"context"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/model"
)

// An image-output model streams the image inline (base64, several MiB) in
// one chunk, one SSE line: a line up to model.MaxResponseBody is read, as a
// whole non-streamed answer may be that large, and the text after it is
// kept. With sse's 4 MiB default the stream failed.
func TestStream_ChunkHoldingAnInlineImageIsRead(t *testing.T) {
	t.Parallel()
	image := `{"inlineData":{"mimeType":"image/png","data":"` + strings.Repeat("QUJD", 6<<20/4) + `"}}`
	stream := "data: " + respJSON(image, "", false) + "\r\n\r\n" +
		"data: " + respJSON(textPart("A red square."), "STOP", true) + "\r\n\r\n"
	rec := newRecorder(t, "text/event-stream", stream)
	m, _ := New(Config{APIKey: "k", BaseURL: rec.URL, Model: "gemini-2.5-flash-image"})
	var acc model.Accumulator
	for c, err := range m.Stream(context.Background(), &model.Request{Messages: []model.Message{model.Text(model.RoleUser, "draw")}}) {
		if err != nil {
			t.Fatal(err)
		}
		acc.Add(c)
	}
	if got := acc.Response().Message.Content; got != "A red square." {
		t.Fatalf("content %q", got)
	}
}
