package trace

import (
	"encoding/json"
	"errors"
	"iter"
	"strconv"
	"strings"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	oteltrace "go.opentelemetry.io/otel/trace"

	"github.com/agentryhq/agentry/internal/clip"
	"github.com/agentryhq/agentry/model"
)

// Content attribute keys (OpenInference, as Agno 3.0's instrumentation
// writes them): the /traces routes show input.value and output.value as a
// trace's and a span's input and output.
const (
	AttrInputValue     = attribute.Key("input.value")
	AttrInputMimeType  = attribute.Key("input.mime_type")
	AttrOutputValue    = attribute.Key("output.value")
	AttrOutputMimeType = attribute.Key("output.mime_type")
)

// DefaultMaxContentBytes caps each recorded text when Content.MaxBytes is 0.
const DefaultMaxContentBytes = 8 << 10

const (
	mimeText = "text/plain"
	mimeJSON = "application/json"
)

// Content says whether spans carry the text of a run: the run's input and
// answer, the messages a model call sends and the answer it gets, a tool
// call's arguments and result (input.value, output.value). The zero value
// records them, as Agno does, each cut to DefaultMaxContentBytes.
type Content struct {
	// Omit keeps prompts, answers, tool arguments and results out of spans
	// (privacy): neither the stored traces nor an OTLP collector get them.
	Omit bool
	// MaxBytes caps each recorded text; a longer one is cut on a UTF-8
	// boundary and ends with TruncatedMarker. 0 is DefaultMaxContentBytes;
	// negative is refused by Validate.
	MaxBytes int
}

// TruncatedMarker ends a text cut to Content.MaxBytes: "…[truncated: 8192
// of 20000 bytes]".
const TruncatedMarker = "…[truncated: %d of %d bytes]"

var errNegativeMaxBytes = errors.New("trace: Content.MaxBytes must not be negative (0 is the default cap)")

// Validate refuses a negative MaxBytes.
func (c Content) Validate() error {
	if c.MaxBytes < 0 {
		return errNegativeMaxBytes
	}
	return nil
}

func (c Content) limit() int {
	if c.MaxBytes <= 0 {
		return DefaultMaxContentBytes
	}
	return c.MaxBytes
}

// cut caps s at the limit, adding the marker when it cut.
func (c Content) cut(s string) string {
	return capped(s, len(s), c.limit())
}

// capped cuts s (the first bytes of a text of total bytes) to limit.
func capped(s string, total, limit int) string {
	if total <= limit && len(s) == total {
		return s
	}
	head, _ := clip.Bytes(s, limit)
	return head + "…[truncated: " + strconv.Itoa(len(head)) + " of " + strconv.Itoa(total) + " bytes]"
}

// WithContent returns tp carrying the content policy c: the spans of
// Instrument, Model, ToolHook, Runner and KnownRunner built on it follow
// it. A nil tp stays nil (tracing off).
func WithContent(tp oteltrace.TracerProvider, c Content) oteltrace.TracerProvider {
	if tp == nil {
		return nil
	}
	if p, ok := tp.(contentProvider); ok {
		tp = p.TracerProvider
	}
	return contentProvider{TracerProvider: tp, content: c}
}

// contentProvider is a TracerProvider with a content policy attached.
type contentProvider struct {
	oteltrace.TracerProvider
	content Content
}

// contentOf is tp's content policy (the zero Content when none is attached).
func contentOf(tp oteltrace.TracerProvider) Content {
	if p, ok := tp.(contentProvider); ok {
		return p.content
	}
	return Content{}
}

// add gathers a content attribute (capped) and its MIME type into b,
// unless content is omitted or text is empty.
func (c Content) add(b *attrBuf, key, mimeKey attribute.Key, text, mime string) {
	if c.Omit || text == "" {
		return
	}
	b.add(key.String(c.cut(text)))
	b.add(mimeKey.String(mime))
}

// messagesJSON is the request's messages as a JSON array, encoded one
// message at a time and no further than the cap: a long history costs
// the cap, not its size. Each message is in the form the database stores
// it (its MarshalJSON: no HTML escaping, no second pass through
// encoding/json to compact what is already compact).
func (c Content) messagesJSON(msgs iter.Seq2[int, model.Message]) string {
	limit := c.limit()
	bp := jsonBufs.Get().(*[]byte)
	b := append((*bp)[:0], '[')
	total := 1
	for _, m := range msgs {
		raw, err := m.MarshalJSON()
		if err != nil {
			continue
		}
		if total > 1 {
			total++
			if len(b) <= limit {
				b = append(b, ',')
			}
		}
		total += len(raw)
		if len(b) <= limit {
			b = append(b, raw[:min(len(raw), limit+1-len(b))]...)
		}
	}
	total++
	if len(b) <= limit {
		b = append(b, ']')
	}
	head := string(b[:min(len(b), limit+1)])
	if cap(b) <= 64<<10 {
		*bp = b
		jsonBufs.Put(bp)
	}
	return capped(head, total, limit)
}

// jsonBufs are scratch buffers for messagesJSON.
var jsonBufs = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

// responseText is what a model call answered: its text, or its tool calls
// as JSON when it has no text.
func responseText(content string, calls []model.ToolCall) (string, string) {
	if content != "" || len(calls) == 0 {
		return content, mimeText
	}
	type call struct {
		ID        string `json:"id,omitempty"`
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	}
	out := make([]call, len(calls))
	for i, c := range calls {
		out[i] = call{ID: c.ID, Name: c.Name, Arguments: c.Arguments}
	}
	b, _ := json.Marshal(out)
	return string(b), mimeJSON
}

// textCollector keeps the first limit bytes of a streamed answer and counts
// the rest, so a long stream costs the cap; it also assembles the streamed
// tool calls, shown when the answer has no text.
type textCollector struct {
	b     strings.Builder
	total int
	limit int
	calls []model.ToolCall
}

func (t *textCollector) addCall(d model.ToolCallDelta) {
	if d.Index < 0 || d.Index > 1024 {
		return
	}
	for len(t.calls) <= d.Index {
		t.calls = append(t.calls, model.ToolCall{})
	}
	c := &t.calls[d.Index]
	if d.ID != "" {
		c.ID = d.ID
	}
	if d.Name != "" {
		c.Name = d.Name
	}
	if len(c.Arguments) <= t.limit {
		c.Arguments += d.Arguments
	}
}

// answer is the streamed answer: its text, or its tool calls as JSON.
func (t *textCollector) answer() (string, string) {
	if t.total > 0 {
		return t.text(), mimeText
	}
	text, mime := responseText("", t.calls)
	return text, mime
}

func (t *textCollector) add(s string) {
	t.total += len(s)
	if room := t.limit + 1 - t.b.Len(); room > 0 {
		if len(s) > room {
			s = s[:room]
		}
		t.b.WriteString(s)
	}
}

func (t *textCollector) text() string { return capped(t.b.String(), t.total, t.limit) }
