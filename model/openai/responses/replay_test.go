package responses

import (
	"encoding/json"
	"testing"

	"github.com/agentryhq/agentry/model"
)

// inputOf is the input list of the request m sends for msgs.
func inputOf(t *testing.T, m *Model, msgs ...model.Message) []map[string]any {
	t.Helper()
	body, err := m.buildRequest(&model.Request{Messages: msgs}, false)
	if err != nil {
		t.Fatal(err)
	}
	var w struct {
		Input []map[string]any `json:"input"`
	}
	if err := json.Unmarshal(body, &w); err != nil {
		t.Fatal(err)
	}
	return w.Input
}

func reasoningIDs(input []map[string]any) []any {
	var ids []any
	for _, it := range input {
		if it["type"] == "reasoning" {
			ids = append(ids, it["id"])
		}
	}
	return ids
}

// Without Store, OpenAI keeps no item, so a reasoning item can only be
// replayed with its encrypted_content: one without it (from a stored
// configuration, a server that sends none) is answered 400 "Item with id
// … not found" and is left out. With Store, the id is enough.
func TestReplay_StatelessReasoningNeedsEncryptedContent(t *testing.T) {
	t.Parallel()
	items := []any{
		map[string]any{"id": "rs_plain", "type": "reasoning", "summary": []any{}},
		map[string]any{"id": "rs_enc", "type": "reasoning", "summary": []any{}, "encrypted_content": "gAAAA"},
	}
	hist := model.Message{Role: model.RoleAssistant, Content: "Earlier.", ProviderData: map[string]any{reasoningKey: items}}
	user := model.Text(model.RoleUser, "hi")
	stateless, _ := New(Config{APIKey: "sk", Model: "o4-mini"})
	if got := reasoningIDs(inputOf(t, stateless, user, hist, user)); len(got) != 1 || got[0] != "rs_enc" {
		t.Errorf("store false replays %v, want [rs_enc]", got)
	}
	stored, _ := New(Config{APIKey: "sk", Model: "o4-mini", Store: true})
	if got := reasoningIDs(inputOf(t, stored, user, hist, user)); len(got) != 2 {
		t.Errorf("store true replays %v, want both items", got)
	}
}

// An assistant turn with reasoning only (cut off by max_output_tokens
// before any text or call) replays no reasoning: OpenAI refuses a
// reasoning item "provided without its required following item".
func TestReplay_ReasoningWithNothingAfterItIsLeftOut(t *testing.T) {
	t.Parallel()
	m, _ := New(Config{APIKey: "sk", Model: "o4-mini"})
	hist := model.Message{Role: model.RoleAssistant, ProviderData: map[string]any{reasoningKey: json.RawMessage(reasoningItem)}}
	user := model.Text(model.RoleUser, "hi")
	if got := inputOf(t, m, user, hist, user); len(got) != 2 {
		t.Errorf("input %v, want the two user messages only", got)
	}
}

// A reasoning item followed by a hosted tool's item (web_search_call),
// which is not replayed, would be replayed without its required following
// item: only reasoning directly followed by a message or a function call
// is kept, streamed or not.
func TestDecode_ReasoningBeforeAHostedToolCallIsNotKept(t *testing.T) {
	t.Parallel()
	rs1 := `{"id":"rs_1","type":"reasoning","summary":[],"encrypted_content":"gAAAA1"}`
	ws := `{"id":"ws_1","type":"web_search_call","status":"completed","action":{"type":"search","query":"weather"}}`
	rs2 := `{"id":"rs_2","type":"reasoning","summary":[],"encrypted_content":"gAAAA2"}`
	msg := message("Sunny.")
	check := func(how string, r *model.Response) {
		t.Helper()
		got := inputOf(t, &Model{cfg: Config{Model: "o4-mini"}}, r.Message)
		if ids := reasoningIDs(got); len(ids) != 1 || ids[0] != "rs_2" || r.Message.Content != "Sunny." {
			t.Errorf("%s: replayed reasoning %v, content %q; want [rs_2], Sunny.", how, ids, r.Message.Content)
		}
	}
	m := &Model{cfg: Config{Model: "o4-mini"}, info: model.Info{Provider: "OpenAI"}}
	r, err := m.decodeResponse([]byte(responseObj("completed", rs1, ws, rs2, msg)))
	if err != nil {
		t.Fatal(err)
	}
	check("invoke", r)
	body := sseBody(created,
		itemAdded("0", rs1), itemDone("0", rs1), itemAdded("1", ws), itemDone("1", ws),
		itemAdded("2", rs2), itemDone("2", rs2), itemAdded("3", msg), textDelta("Sunny."), itemDone("3", msg),
		completed(rs1, ws, rs2, msg))
	sr, err := drainStream(t, body)
	if err != nil {
		t.Fatal(err)
	}
	check("stream", sr)
}
