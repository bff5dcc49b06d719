package agent

import (
	"context"
	"encoding/base64"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/agentryhq/agentry/db/dbtest/testdbs"
	"github.com/agentryhq/agentry/media/local"
	"github.com/agentryhq/agentry/model"
	"github.com/agentryhq/agentry/model/anthropic"
	"github.com/agentryhq/agentry/model/gemini"
	"github.com/agentryhq/agentry/model/openai"
	"github.com/agentryhq/agentry/model/openai/responses"
	"github.com/agentryhq/agentry/model/scripted"
	"github.com/agentryhq/agentry/run"
)

// wireServer answers every call with one streamed text reply in a
// provider's wire format and keeps the request bodies.
type wireServer struct {
	mu     sync.Mutex
	bodies []string
}

func (w *wireServer) last() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.bodies) == 0 {
		return ""
	}
	return w.bodies[len(w.bodies)-1]
}

func startWire(t *testing.T, frames ...string) (*wireServer, string) {
	t.Helper()
	ws := &wireServer{}
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		ws.mu.Lock()
		ws.bodies = append(ws.bodies, string(b))
		ws.mu.Unlock()
		rw.Header().Set("Content-Type", "text/event-stream")
		for _, f := range frames {
			io.WriteString(rw, f+"\n\n")
		}
	}))
	t.Cleanup(srv.Close)
	return ws, srv.URL
}

var (
	chatFrames = []string{
		`data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":"ok"},"finish_reason":null}]}`,
		`data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`,
		`data: [DONE]`}
	responsesFrames = []string{
		"event: response.created\ndata: {\"type\":\"response.created\",\"response\":{\"id\":\"resp_1\",\"object\":\"response\",\"status\":\"in_progress\",\"output\":[]}}",
		"event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"item_id\":\"msg_1\",\"output_index\":0,\"content_index\":0,\"delta\":\"ok\"}",
		"event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"id\":\"resp_1\",\"object\":\"response\",\"status\":\"completed\",\"output\":[{\"type\":\"message\",\"id\":\"msg_1\",\"role\":\"assistant\",\"status\":\"completed\",\"content\":[{\"type\":\"output_text\",\"text\":\"ok\",\"annotations\":[]}]}],\"usage\":{\"input_tokens\":1,\"output_tokens\":1,\"total_tokens\":2}}}"}
	anthropicFrames = []string{
		"event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"claude\",\"content\":[],\"stop_reason\":null,\"usage\":{\"input_tokens\":1,\"output_tokens\":1}}}",
		"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}",
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"ok\"}}",
		"event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}",
		"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":1}}",
		"event: message_stop\ndata: {\"type\":\"message_stop\"}"}
	geminiFrames = []string{
		`data: {"candidates":[{"content":{"parts":[{"text":"ok"}],"role":"model"},"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":1,"candidatesTokenCount":1,"totalTokenCount":2}}`}
)

// History media stored as references reach each provider as a fresh signed
// URL where its API takes URLs for that kind, and as bytes where it does
// not: checked on the request body each provider's wire format carries.
func TestMedia_HistoryRehydratesPerProviderWireFormat(t *testing.T) {
	t.Parallel()
	base, err := local.New(filepath.Join(t.TempDir(), "media"))
	if err != nil {
		t.Fatal(err)
	}
	store := signingStorage{base}
	img := jpeg(3000)
	pdf := append([]byte("%PDF-1.4\n"), jpeg(2000)...)
	imgB64, pdfB64 := base64.StdEncoding.EncodeToString(img), base64.StdEncoding.EncodeToString(pdf)
	const signed = "https://media.example/owners/"
	cases := []struct {
		name   string
		frames []string
		build  func(url string) (model.Model, error)
		// want holds what the body must contain, refuse what it must not
		want, refuse []string
	}{
		{"openai chat: image by URL, file as bytes", chatFrames,
			func(u string) (model.Model, error) {
				return openai.New(openai.Config{BaseURL: u, Model: "gpt-4o", APIKey: "k"})
			},
			[]string{`"image_url":{"url":"` + signed, `"file_data":"data:application/pdf;base64,` + pdfB64}, []string{imgB64}},
		{"openai-compatible chat: both as bytes", chatFrames,
			func(u string) (model.Model, error) {
				return openai.New(openai.Config{BaseURL: u, Model: "llava", APIKey: "k", ProviderName: "Ollama"})
			},
			[]string{imgB64, pdfB64}, []string{signed}},
		{"openai responses: image and file by URL", responsesFrames,
			func(u string) (model.Model, error) {
				return responses.New(responses.Config{BaseURL: u, Model: "gpt-4.1", APIKey: "k"})
			},
			[]string{`"image_url":"` + signed, `"file_url":"` + signed}, []string{imgB64, pdfB64}},
		{"anthropic: image and PDF as url sources", anthropicFrames,
			func(u string) (model.Model, error) {
				return anthropic.New(anthropic.Config{BaseURL: u, Model: "claude-sonnet-4-5", APIKey: "k"})
			},
			[]string{`"type":"image","source":{"type":"url","url":"` + signed, `"type":"document","source":{"type":"url","url":"` + signed}, []string{imgB64, pdfB64}},
		{"gemini 3: fileData URIs", geminiFrames,
			func(u string) (model.Model, error) {
				return gemini.New(gemini.Config{BaseURL: u, Model: "gemini-3-flash-preview", APIKey: "k"})
			},
			[]string{`"fileUri":"` + signed}, []string{imgB64, pdfB64}},
		{"gemini 2.5: inline bytes", geminiFrames,
			func(u string) (model.Model, error) {
				return gemini.New(gemini.Config{BaseURL: u, Model: "gemini-2.5-flash", APIKey: "k"})
			},
			[]string{imgB64, pdfB64}, []string{signed}},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			d := testdbs.SQLite(t)
			session := "wire-" + string(rune('a'+i))
			first := mustAgent(t, Config{ID: "viewer", Model: scripted.Reply("seen"), DB: d, MediaStorage: store, AddHistoryToContext: true})
			in := run.Input{InputContent: "keep these", Images: []run.Media{{Content: img, MIMEType: "image/jpeg"}},
				Files: []run.Media{{Content: pdf, MIMEType: "application/pdf", Name: "doc.pdf"}}}
			if _, err := first.Run(context.Background(), in, WithSessionID(session)); err != nil {
				t.Fatal(err)
			}
			ws, u := startWire(t, tc.frames...)
			m, err := tc.build(u)
			if err != nil {
				t.Fatal(err)
			}
			a := mustAgent(t, Config{ID: "viewer", Model: m, DB: d, MediaStorage: store, AddHistoryToContext: true})
			out, err := a.Run(context.Background(), run.TextInput("and now?"), WithSessionID(session))
			if err != nil || out.ContentString() != "ok" {
				t.Fatalf("run: %v (%q); request: %.300s", err, out.ContentString(), ws.last())
			}
			body := ws.last()
			for _, w := range tc.want {
				if !strings.Contains(body, w) {
					t.Errorf("request lacks %.80q\nbody: %.600s", w, body)
				}
			}
			for _, r := range tc.refuse {
				if strings.Contains(body, r) {
					t.Errorf("request holds %.60q", r)
				}
			}
		})
	}
}
