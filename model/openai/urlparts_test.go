package openai_test

import (
	"testing"

	"github.com/agentryhq/agentry/model"
	"github.com/agentryhq/agentry/model/openai"
)

func TestAcceptsURL_ImagesOnlyAndOnlyOpenAIItself(t *testing.T) {
	t.Parallel()
	m, err := openai.New(openai.Config{BaseURL: "http://127.0.0.1:1/v1", Model: "gpt-4o-mini", APIKey: "k"})
	if err != nil {
		t.Fatal(err)
	}
	for typ, want := range map[model.PartType]bool{model.PartImage: true, model.PartAudio: false, model.PartFile: false, model.PartVideo: false} {
		if got := model.AcceptsURL(m, typ, ""); got != want {
			t.Errorf("AcceptsURL(%s) = %v", typ, got)
		}
	}
	// a compatible server may not fetch URLs (Ollama takes base64 only)
	other, err := openai.New(openai.Config{BaseURL: "http://127.0.0.1:1/v1", Model: "llava", APIKey: "k", ProviderName: "Ollama"})
	if err != nil {
		t.Fatal(err)
	}
	if model.AcceptsURL(other, model.PartImage, "image/png") {
		t.Error("a compatible server takes image URLs")
	}
	// the retry wrapper keeps the ability
	if !model.AcceptsURL(model.WithRetry(m, model.RetryConfig{}), model.PartImage, "") {
		t.Error("WithRetry hides AcceptsURL")
	}
}
