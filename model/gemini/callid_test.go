package gemini

import (
	"context"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/model"
)

// Gemini's calls without an id get a local one; when the answer carries no
// responseId either (a proxy, an older API version), calls of two turns still
// get different ids, so a tool result is never paired with another turn's
// call.
func TestDecode_CallIDsWithoutAResponseIDDifferAcrossTurns(t *testing.T) {
	t.Parallel()
	body := `{"candidates":[{"content":{"role":"model","parts":[` + callPart("look", `{}`, "") + `]},"finishReason":"STOP"}]}`
	rec := newRecorder(t, "application/json", body)
	m, err := New(Config{APIKey: "k", BaseURL: rec.URL, Model: "gemini-2.5-flash"})
	if err != nil {
		t.Fatal(err)
	}
	req := &model.Request{Messages: []model.Message{model.Text(model.RoleUser, "hi")}}
	seen := map[string]bool{}
	for range 2 {
		r, err := m.Invoke(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		id := r.Message.ToolCalls[0].ID
		if !strings.HasPrefix(id, syntheticIDPrefix) || seen[id] {
			t.Fatalf("call id %q (seen before: %v)", id, seen[id])
		}
		seen[id] = true
	}
	// In a stream, a chunk without the responseId the others carry keeps
	// the stream's.
	stream := "data: " + respJSON(callPart("look", `{}`, ""), "", false) + "\n\n" +
		"data: " + respJSON(callPart("look", `{"a":1}`, ""), "STOP", true) + "\n\n"
	var ids []string
	for c, err := range decodeStream(strings.NewReader(stream)) {
		if err != nil {
			t.Fatal(err)
		}
		for _, tc := range c.ToolCalls {
			ids = append(ids, tc.ID)
		}
	}
	if len(ids) != 2 || ids[0] != "gcall_resp-1_0" || ids[1] != "gcall_resp-1_1" {
		t.Errorf("stream call ids %q, want gcall_resp-1_0 and gcall_resp-1_1", ids)
	}
}
