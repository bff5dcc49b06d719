package trace_test

import (
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/model"
	"github.com/agentryhq/agentry/model/scripted"
	"github.com/agentryhq/agentry/trace"
)

// urlModel takes images by URL (model.URLAccepter), as Gemini, Anthropic
// and OpenAI do.
type urlModel struct{ *scripted.Model }

func (urlModel) AcceptsURL(t model.PartType, _ string) bool { return t == model.PartImage }

// A traced model keeps the optional abilities of the model it wraps: with
// tracing on, a model that takes media by URL was sent every stored image
// as bytes (read from media storage and inlined) instead of a signed URL.
func TestInstrument_KeepsTheModelsAbilities(t *testing.T) {
	tp := sdktrace.NewTracerProvider()
	defer tp.Shutdown(t.Context())
	cfg := agent.Config{Model: urlModel{scripted.Reply("ok")}, FallbackModels: []model.Model{urlModel{scripted.Reply("ok")}}}
	trace.Instrument(&cfg, tp)
	for _, m := range []model.Model{cfg.Model, cfg.FallbackModels[0], trace.Model(urlModel{scripted.Reply("ok")}, tp)} {
		if !model.AcceptsURL(m, model.PartImage, "image/png") {
			t.Fatalf("the traced model %T does not take images by URL; the wrapped one does", m)
		}
		if model.AcceptsURL(m, model.PartAudio, "audio/wav") {
			t.Fatalf("the traced model %T takes audio by URL; the wrapped one does not", m)
		}
		if !model.ReadsHistory(m) {
			t.Fatalf("the traced model %T does not read history through All; the wrapped one does", m)
		}
	}
}
