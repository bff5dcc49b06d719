package gemini

import (
	"context"
	"testing"

	"github.com/agentryhq/agentry/model"
)

// A model given by its resource name, as ListModels and Google's docs spell
// it ("models/gemini-2.5-flash", Vertex's "publishers/google/models/…"),
// reaches the model's endpoint, as the google-genai SDK (and so Agno) takes
// it, not a path with an escaped slash that answers 404.
func TestNew_ModelResourceNamesReachTheModel(t *testing.T) {
	t.Parallel()
	rec := newRecorder(t, "application/json", respJSON(textPart("ok"), "STOP", true))
	for _, tc := range []struct {
		cfg  Config
		path string
	}{
		{Config{Model: "models/gemini-3-pro-preview", APIKey: "k"}, "/v1beta/models/gemini-3-pro-preview:generateContent"},
		{Config{Model: "publishers/google/models/gemini-2.5-flash", Vertex: true, APIKey: "k"}, "/v1/publishers/google/models/gemini-2.5-flash:generateContent"},
		{Config{Model: "models/gemini-2.5-flash", Vertex: true, APIKey: "k"}, "/v1/publishers/google/models/gemini-2.5-flash:generateContent"},
	} {
		tc.cfg.BaseURL = rec.URL
		m, err := New(tc.cfg)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := m.Invoke(context.Background(), &model.Request{Messages: []model.Message{model.Text(model.RoleUser, "hi")}}); err != nil {
			t.Fatal(err)
		}
		if r, _ := rec.last(t); r.URL.EscapedPath() != tc.path {
			t.Errorf("model %q: request to %s, want %s", tc.cfg.Model, r.URL.EscapedPath(), tc.path)
		}
	}
	m, _ := New(Config{Model: "models/gemini-3-pro-preview", APIKey: "k"})
	if !m.AcceptsURL(model.PartImage, "image/png") {
		t.Error("models/gemini-3-… is not seen as a Gemini 3 model")
	}
}
