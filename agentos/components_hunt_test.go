package agentos

import (
	"testing"
)

// TestPatchComponent_CurrentVersionOutOfRangeIs422: PATCH /components/{id}
// with a current_version past the version column's range reached the
// database: a 500 on Postgres (the value does not fit its integer). A
// version below 1 or past 2³¹-1 is now a 422, as in the version routes'
// path, and a version that does not exist is the set-current route's 404
// naming it (it was a bare "Not Found"); the component is unchanged.
func TestPatchComponent_CurrentVersionOutOfRangeIs422(t *testing.T) {
	t.Parallel()
	for name, open := range componentDBs(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := newCompFixture(t, open(t))
			v1 := f.script(t, "v1", "answer one", "")
			want(t, f.send(t, f.alice, "POST", "/components", jsonBody(map[string]any{"name": "Helper", "component_id": "helper", "component_type": "agent",
				"stage": "published", "config": map[string]any{"model": v1}})), 201, `"current_version":1`)
			for _, v := range []string{"9999999999999", "2147483648", "0", "-1"} {
				want(t, f.send(t, f.alice, "PATCH", "/components/helper", `{"current_version":`+v+`}`), 422, "current_version must be a positive integer")
			}
			want(t, f.send(t, f.alice, "PATCH", "/components/helper", `{"current_version":2147483647}`), 404, "Component helper or config version 2147483647 not found")
			want(t, f.send(t, f.alice, "PATCH", "/components/helper", `{"current_version":1}`), 200, `"current_version":1`)
			want(t, f.send(t, f.alice, "GET", "/components/helper", ""), 200, `"current_version":1`)
		})
	}
}
