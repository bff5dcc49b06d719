package migrate

import (
	"encoding/json"
	"testing"
)

// FuzzMergeEntityContent: merging any two JSON objects never panics, and a
// merge that succeeds is a JSON object holding every key of both inputs.
func FuzzMergeEntityContent(f *testing.F) {
	f.Add(`{"name":"A","facts":[{"content":"x"}],"aliases":["a"]}`, `{"name":"B","facts":["x"],"properties":{"k":1}}`)
	f.Add(`{"facts":"nope"}`, `{}`)
	f.Add(`{"properties":[1]}`, `{"events":[{"content":"e","date":null}]}`)
	f.Add(`{"name":1,"aliases":[null,true,"ß"]}`, `{"name":"SS","description":""}`)
	f.Fuzz(func(t *testing.T, src, dst string) {
		var a, b map[string]json.RawMessage
		if json.Unmarshal([]byte(src), &a) != nil || json.Unmarshal([]byte(dst), &b) != nil || a == nil || b == nil {
			return
		}
		out, err := mergeEntityContent(json.RawMessage(src), json.RawMessage(dst))
		if err != nil {
			return
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(out, &m); err != nil {
			t.Fatalf("merge of %s and %s is not an object: %s", src, dst, out)
		}
		for k := range a {
			if _, ok := m[k]; !ok {
				t.Fatalf("merge lost source key %q", k)
			}
		}
		for k := range b {
			if _, ok := m[k]; !ok {
				t.Fatalf("merge lost target key %q", k)
			}
		}
	})
}
