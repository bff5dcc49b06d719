package responses

import (
	"strings"
	"testing"
)

// An image the image_generation built-in tool made (base64, several MiB)
// arrives in one SSE line, twice (its output_item.done and
// response.completed): a line up to model.MaxResponseBody is read, as a
// whole non-streamed answer may be that large, and the text around it is
// kept. With sse's 4 MiB default the stream failed.
func TestStream_LineHoldingAGeneratedImageIsRead(t *testing.T) {
	t.Parallel()
	image := `{"id":"ig_1","type":"image_generation_call","status":"completed","result":"` + strings.Repeat("QUJD", 6<<20/4) + `"}`
	text := `{"id":"msg_1","type":"message","status":"completed","role":"assistant","content":[{"type":"output_text","text":"Here it is.","annotations":[]}]}`
	body := sseBody(created, itemAdded("0", image), itemDone("0", image),
		itemAdded("1", text), ev("response.output_text.delta", `"item_id":"msg_1","output_index":1,"content_index":0,"delta":"Here it is."`), itemDone("1", text),
		completed(image, text))
	r, err := drainStream(t, body)
	if err != nil {
		t.Fatal(err)
	}
	if r.Message.Content != "Here it is." {
		t.Fatalf("content %q", r.Message.Content)
	}
}
