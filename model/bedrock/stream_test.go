package bedrock

import (
	"bytes"
	"context"
	"testing"

	"github.com/agentryhq/agentry/model"
)

func streamOf(t *testing.T, body []byte, req *model.Request) (*model.Response, error) {
	t.Helper()
	rec := newRecorder(t, "application/vnd.amazon.eventstream", body)
	m := newTestModel(t, rec.URL, model.Params{})
	var acc model.Accumulator
	for c, err := range m.Stream(context.Background(), req) {
		if err != nil {
			return acc.Response(), err
		}
		acc.Add(c)
	}
	return acc.Response(), nil
}

// A tool without parameters is called with no input: ConverseStream sends
// no input delta, or one with an empty input. Its arguments are {}, as
// Converse (Invoke) gives them, not "".
func TestStream_ToolCallWithoutInputHasEmptyObjectArguments(t *testing.T) {
	t.Parallel()
	req := &model.Request{Messages: []model.Message{model.Text(model.RoleUser, "time?")},
		Tools: []model.ToolSpec{{Name: "now"}}, ResponseFormat: nil}
	tests := []struct {
		name   string
		frames [][]byte
	}{
		{"no input delta", [][]byte{msgStart(), toolStart("0", "t1", "now"), blockStop("0"), msgStop("tool_use"), metadata()}},
		{"empty input delta", [][]byte{msgStart(), toolStart("0", "t1", "now"), toolDelta("0", ""), blockStop("0"), msgStop("tool_use"), metadata()}},
		{"second of two calls", [][]byte{msgStart(), toolStart("0", "t0", "now"), toolDelta("0", "{}"), blockStop("0"),
			toolStart("1", "t1", "now"), blockStop("1"), msgStop("tool_use"), metadata()}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r, err := streamOf(t, bytes.Join(tc.frames, nil), req)
			if err != nil {
				t.Fatal(err)
			}
			calls := r.Message.ToolCalls
			if len(calls) == 0 || calls[len(calls)-1].ID != "t1" {
				t.Fatalf("tool calls %+v, want one with id t1", calls)
			}
			for _, c := range calls {
				if c.Arguments != "{}" {
					t.Errorf("call %s arguments %q, want {}", c.ID, c.Arguments)
				}
			}
		})
	}
}

// The structured-output tool called with no input delta answers {} (as
// Invoke does), not an empty Content.
func TestStream_StructuredToolWithoutInputAnswersEmptyObject(t *testing.T) {
	t.Parallel()
	req := &model.Request{Messages: []model.Message{model.Text(model.RoleUser, "hi")},
		ResponseFormat: &model.ResponseFormat{Name: "empty", Schema: []byte(`{"type":"object"}`)}}
	r, err := streamOf(t, bytes.Join([][]byte{msgStart(), toolStart("0", "s", "empty"), blockStop("0"), msgStop("tool_use"), metadata()}, nil), req)
	if err != nil {
		t.Fatal(err)
	}
	if r.Message.Content != "{}" || r.StopReason != "end_turn" {
		t.Errorf("content %q stop %q, want {} and end_turn", r.Message.Content, r.StopReason)
	}
}
