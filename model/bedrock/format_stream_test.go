package bedrock

import (
	"bytes"
	"context"
	"testing"

	"github.com/agentryhq/agentry/model"
)

// Text the model writes before calling the structured-output tool is not part
// of the answer: streamed, Content is the tool's JSON alone, as Invoke gives it.
func TestStream_StructuredOutputDropsTextBeforeTheFormatTool(t *testing.T) {
	t.Parallel()
	req := &model.Request{Messages: []model.Message{model.Text(model.RoleUser, "weather?")},
		ResponseFormat: &model.ResponseFormat{Name: "weather", Schema: []byte(`{"type":"object"}`)}}
	frames := [][]byte{msgStart(), textDelta("0", "Here is the answer: "), blockStop("0"),
		toolStart("1", "s", "weather"), toolDelta("1", `{\"city\":`), toolDelta("1", `\"Paris\"}`), blockStop("1"),
		msgStop("tool_use"), metadata()}
	r, err := streamOf(t, bytes.Join(frames, nil), req)
	if err != nil {
		t.Fatal(err)
	}
	if r.Message.Content != `{"city":"Paris"}` || r.StopReason != "end_turn" {
		t.Errorf("streamed content %q stop %q, want {\"city\":\"Paris\"} and end_turn", r.Message.Content, r.StopReason)
	}
	rec := newRecorder(t, "application/json", []byte(`{"output":{"message":{"role":"assistant","content":[{"text":"Here is the answer: "},`+
		`{"toolUse":{"toolUseId":"s","name":"weather","input":{"city":"Paris"}}}]}},"stopReason":"tool_use","usage":`+usageJSON+`}`))
	inv, err := newTestModel(t, rec.URL, model.Params{}).Invoke(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if inv.Message.Content != r.Message.Content {
		t.Errorf("Invoke content %q, Stream content %q: they differ", inv.Message.Content, r.Message.Content)
	}
}

// A model that answers in text instead of calling the structured-output tool
// still has its text returned, streamed as by Invoke.
func TestStream_StructuredOutputWithoutTheToolKeepsTheText(t *testing.T) {
	t.Parallel()
	req := &model.Request{Messages: []model.Message{model.Text(model.RoleUser, "weather?")},
		ResponseFormat: &model.ResponseFormat{Name: "weather", Schema: []byte(`{"type":"object"}`)}}
	frames := [][]byte{msgStart(), textDelta("0", "I cannot "), textDelta("0", "say."), blockStop("0"), msgStop("end_turn"), metadata()}
	r, err := streamOf(t, bytes.Join(frames, nil), req)
	if err != nil {
		t.Fatal(err)
	}
	if r.Message.Content != "I cannot say." || r.Usage != testUsage {
		t.Errorf("content %q usage %+v, want the text and %+v", r.Message.Content, r.Usage, testUsage)
	}
}
