package run

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/agentryhq/agentry/model"
)

// plainMessage is read over model.Message's memory (unsafe.Slice): every
// field must match in name, tag, offset and type (metrics: the plain view of
// the same layout), and the encodings must be equal.
func TestPlainMessage_SameLayout(t *testing.T) {
	t.Parallel()
	same := func(t *testing.T, a, b reflect.Type, plain map[reflect.Type]reflect.Type) {
		t.Helper()
		if a.Size() != b.Size() || a.NumField() != b.NumField() {
			t.Fatalf("%v: size %d, %d fields; %v: size %d, %d fields", a, a.Size(), a.NumField(), b, b.Size(), b.NumField())
		}
		for i := range a.NumField() {
			fa, fb := a.Field(i), b.Field(i)
			tb := fb.Type
			if p, ok := plain[fa.Type]; ok && p == fb.Type {
				tb = fa.Type
			}
			if fa.Name != fb.Name || fa.Tag != fb.Tag || fa.Offset != fb.Offset || fa.Type != tb || fa.Anonymous != fb.Anonymous {
				t.Errorf("%v field %d: %s %v %q at %d; %v has %s %v %q at %d", a, i, fa.Name, fa.Type, fa.Tag, fa.Offset, b, fb.Name, fb.Type, fb.Tag, fb.Offset)
			}
		}
	}
	same(t, reflect.TypeFor[model.MessageMetrics](), reflect.TypeFor[plainMessageMetrics](), nil)
	same(t, reflect.TypeFor[model.Message](), reflect.TypeFor[plainMessage](), map[reflect.Type]reflect.Type{
		reflect.TypeFor[*model.MessageMetrics](): reflect.TypeFor[*plainMessageMetrics](),
	})

	msgs := []model.Message{
		{Role: model.RoleSystem, Content: "be brief <b>&</b>", CreatedAt: 1},
		{Role: model.RoleAssistant, Content: "hi", ToolCalls: []model.ToolCall{{ID: "c1", Name: "f", Arguments: `{"a":1}`}},
			Metrics:      &model.MessageMetrics{Usage: model.Usage{InputTokens: 3, OutputTokens: 2, TotalTokens: 5, Duration: 0.25}},
			ProviderData: map[string]any{"response_id": "r1"}, FromHistory: true, CreatedAt: 2},
		{Role: model.RoleTool, ToolCallID: "c1", ToolName: "f", ToolArgs: json.RawMessage(`{"a":1}`), ToolCallError: true, Content: "boom"},
	}
	want, err := json.Marshal(Output{RunID: "r", Messages: msgs})
	if err != nil {
		t.Fatal(err)
	}
	// The same run written through each message's own MarshalJSON.
	msgs[0].Extra = map[string]json.RawMessage{}
	got, err := json.Marshal(Output{RunID: "r", Messages: msgs})
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Errorf("through the plain view:\n %s\nthrough MarshalJSON:\n %s", want, got)
	}
}

// An agent run's metrics written through metricsJSON are byte for byte what
// Metrics.MarshalJSON writes.
func TestPlainMetrics_SameBytes(t *testing.T) {
	t.Parallel()
	mm := ModelMetrics{ID: "gpt", Provider: "OpenAI", Usage: model.Usage{InputTokens: 3, OutputTokens: 4, TotalTokens: 7}}
	for name, m := range map[string]*Metrics{
		"agent run": {Usage: model.Usage{InputTokens: 3, OutputTokens: 4, TotalTokens: 7}, Duration: 1.5, TimeToFirstToken: 0.25,
			Details: map[string][]ModelMetrics{"model": {mm}}},
		"two models":  {Details: map[string][]ModelMetrics{"model": {mm, mm}}},
		"with steps":  {Duration: 2, Details: map[string][]ModelMetrics{"model": {mm}}, Steps: map[string]StepMetrics{"s": {StepName: "s"}}},
		"empty steps": {Details: map[string][]ModelMetrics{"model": {mm}}, Steps: map[string]StepMetrics{}},
		"other role":  {Details: map[string][]ModelMetrics{"reasoning_model": {mm}}},
		"two roles":   {Details: map[string][]ModelMetrics{"model": {mm}, "reasoning_model": {mm}}},
		"no details":  {Duration: 1},
	} {
		want, err := m.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		got, err := json.Marshal(plainMetrics(m))
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Errorf("%s:\n got %s\nwant %s", name, got, want)
		}
	}
}
