package responses

import (
	"context"
	"testing"

	"github.com/agentryhq/agentry/model"
)

func drainStream(t *testing.T, body string) (*model.Response, error) {
	t.Helper()
	rec := newRecorder(t, "text/event-stream", body)
	m, err := New(Config{APIKey: "sk", BaseURL: rec.URL, Model: "o4-mini"})
	if err != nil {
		t.Fatal(err)
	}
	var acc model.Accumulator
	for c, err := range m.Stream(context.Background(), &model.Request{Messages: []model.Message{model.Text(model.RoleUser, "x")}}) {
		if err != nil {
			return acc.Response(), err
		}
		acc.Add(c)
	}
	return acc.Response(), nil
}

// A function call whose arguments arrive only with its output_item.done
// (no argument deltas, as some Responses-compatible servers stream it) keeps
// them; a call that streamed deltas is not given them twice.
func TestStream_FunctionCallArgumentsOnlyInItemDone(t *testing.T) {
	t.Parallel()
	added := func(index, id string) string {
		return itemAdded(index, `{"id":"fc_`+index+`","type":"function_call","status":"in_progress","arguments":"","call_id":"`+id+`","name":"get_weather"}`)
	}
	body := sseBody(created,
		added("0", "call_a"), itemDone("0", parisCall),
		added("1", "call_b"), argsDelta("1", `{"city":`), argsDelta("1", `"Lyon"}`), itemDone("1", lyonCall),
		completed(parisCall, lyonCall))
	r, err := drainStream(t, body)
	if err != nil {
		t.Fatal(err)
	}
	calls := r.Message.ToolCalls
	if len(calls) != 2 || calls[0].Arguments != `{"city":"Paris"}` || calls[1].Arguments != `{"city":"Lyon"}` {
		t.Fatalf("tool calls %+v, want Paris then Lyon, each once", calls)
	}
}
