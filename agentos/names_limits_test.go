package agentos

import (
	"net/http"
	"strings"
	"testing"
)

// A component's name is 1 to 255 characters, not blank, on create and on
// PATCH (an empty name was stored: a component no list shows by name), and
// its description fits its TEXT column; refused writes change nothing.
func TestComponents_NameAndDescriptionBoundsAre422(t *testing.T) {
	t.Parallel()
	for name, open := range componentDBs(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := newCompFixture(t, open(t))
			m := f.script(t, "m", "x", "")
			create := func(n string) response {
				return f.send(t, f.alice, "POST", "/components", jsonBody(map[string]any{"name": n, "component_id": "c" + string(rune('a'+len(n)%26)),
					"component_type": "agent", "stage": "published", "config": map[string]any{"model": m}}))
			}
			want(t, create(""), 422, "name is required")
			want(t, create("   "), 422, "name is required")
			want(t, create(strings.Repeat("é", 256)), 422, "at most 255 characters")
			want(t, create(strings.Repeat("é", 255)), 201)
			want(t, f.send(t, f.alice, "POST", "/components", jsonBody(map[string]any{"name": "Helper", "component_id": "helper", "component_type": "agent",
				"description": strings.Repeat("d", 65536), "config": map[string]any{"model": m}})), 422, "description must be at most 65535 bytes")
			want(t, f.send(t, f.alice, "POST", "/components", jsonBody(map[string]any{"name": "Helper", "component_id": "helper", "component_type": "agent",
				"stage": "published", "config": map[string]any{"model": m}})), 201)
			for _, body := range []string{`{"name": ""}`, `{"name": " "}`, jsonBody(map[string]any{"name": strings.Repeat("n", 256)}),
				jsonBody(map[string]any{"description": strings.Repeat("d", 65536)})} {
				if res := f.send(t, f.alice, "PATCH", "/components/helper", body); res.status != http.StatusUnprocessableEntity {
					t.Errorf("PATCH %.40s: %d %s", body, res.status, res.body)
				}
			}
			want(t, f.send(t, f.alice, "GET", "/components/helper", ""), 200, `"name":"Helper"`)
			want(t, f.send(t, f.alice, "PATCH", "/components/helper", `{"name": "Renamed"}`), 200, `"name":"Renamed"`)
		})
	}
}

// A knowledge upload's name and description have the bounds PATCH keeps
// (255 and 1000 characters); nothing is stored for a refused upload.
func TestKnowledgeUpload_NameAndDescriptionBoundsAre422(t *testing.T) {
	t.Parallel()
	f := newKnowledgeFixture(t, 0)
	for _, tt := range []struct {
		fields map[string]string
		status int
		detail string
	}{
		{map[string]string{"text_content": "x", "name": strings.Repeat("n", 256)}, 422, "name must be 1 to 255 characters"},
		{map[string]string{"text_content": "x", "description": strings.Repeat("d", 1001)}, 422, "description must be at most 1000 characters"},
		{map[string]string{"text_content": "y", "name": strings.Repeat("é", 255), "description": strings.Repeat("d", 1000)}, 202, ""},
	} {
		body, ct := knowledgeForm(t, tt.fields, "", nil)
		res := do(t, "POST", f.url+"/knowledge/content", body, withCT(f.adminH, ct))
		if res.status != tt.status || (tt.detail != "" && !strings.Contains(res.detail(t), tt.detail)) {
			t.Errorf("%d %.200s, want %d %q", res.status, res.body, tt.status, tt.detail)
		}
	}
	res := get(t, f.url+"/knowledge/content?limit=100", f.adminH)
	if strings.Contains(res.body, strings.Repeat("n", 256)) || strings.Count(res.body, `"id"`) != 4 {
		t.Errorf("contents after the uploads: %s", res.body)
	}
}
