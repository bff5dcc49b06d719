package openai_test

import (
	"testing"

	"github.com/agentryhq/agentry/model"
	"github.com/agentryhq/agentry/model/openai"
)

func TestAcceptsURL_ImagesOnly(t *testing.T) {
	t.Parallel()
	m, err := openai.New(openai.Config{BaseURL: "http://127.0.0.1:1/v1", Model: "gpt-4o-mini", APIKey: "k"})
	if err != nil {
		t.Fatal(err)
	}
	var ua model.URLAccepter = m
	for typ, want := range map[model.PartType]bool{model.PartImage: true, model.PartAudio: false, model.PartFile: false, model.PartVideo: false} {
		if got := ua.AcceptsURL(typ); got != want {
			t.Errorf("AcceptsURL(%s) = %v", typ, got)
		}
	}
}
