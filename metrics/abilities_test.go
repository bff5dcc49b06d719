package metrics_test

import (
	"testing"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/metrics"
	"github.com/agentryhq/agentry/model"
	"github.com/agentryhq/agentry/model/scripted"
)

// urlModel takes images by URL (model.URLAccepter), as Gemini, Anthropic
// and OpenAI do.
type urlModel struct{ *scripted.Model }

func (urlModel) AcceptsURL(t model.PartType, _ string) bool { return t == model.PartImage }

// A metered model keeps the optional abilities of the model it wraps: with
// metrics on, a model that takes media by URL was sent every stored image
// as bytes (read from media storage and inlined) instead of a signed URL.
func TestInstrument_KeepsTheModelsAbilities(t *testing.T) {
	cfg := agent.Config{Model: urlModel{scripted.Reply("ok")}}
	metrics.New().Instrument(&cfg)
	if !model.AcceptsURL(cfg.Model, model.PartImage, "image/png") {
		t.Fatal("the metered model does not take images by URL; the wrapped one does")
	}
	if model.AcceptsURL(cfg.Model, model.PartAudio, "audio/wav") {
		t.Fatal("the metered model takes audio by URL; the wrapped one does not")
	}
	if !model.ReadsHistory(cfg.Model) {
		t.Fatal("the metered model does not read history through All; the wrapped one does")
	}
}
