package model_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/internal/jsontest"
	"github.com/agentryhq/agentry/model"
)

func TestToolCall_WritesOpenAIShapeAgnoReads(t *testing.T) {
	t.Parallel()
	got, err := json.Marshal(model.ToolCall{ID: "call_1", Name: "get_weather", Arguments: `{"city":"Paris"}`})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}`
	if d := jsontest.Diff([]byte(want), got); d != "" {
		t.Errorf("%s\ngot %s", d, got)
	}
}

func TestToolCall_ReadsEveryStoredShape(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, stored string
		want         model.ToolCall
		// rewritten is what is written back, when not the stored JSON itself.
		rewritten string
	}{
		{"OpenAI nested", `{"id":"c","type":"function","function":{"name":"f","arguments":"{\"a\": 1}"}}`,
			model.ToolCall{ID: "c", Name: "f", Arguments: `{"a": 1}`}, ""},
		{"flat (older Agentry)", `{"id":"c","name":"f","arguments":"{}"}`,
			model.ToolCall{ID: "c", Name: "f", Arguments: `{}`}, `{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}`},
		{"Gemini thought signature", `{"id":"c","type":"function","function":{"name":"f","arguments":""},"thought_signature":"c2ln"}`,
			model.ToolCall{ID: "c", Name: "f"}, ""},
		{"null arguments (Ollama, Cerebras)", `{"id":"c","type":"function","function":{"name":"f","arguments":null}}`,
			model.ToolCall{ID: "c", Name: "f"}, ""},
		{"object arguments", `{"id":"c","type":"function","function":{"name":"f","arguments":{"q": "x<y"}}}`,
			model.ToolCall{ID: "c", Name: "f", Arguments: `{"q":"x<y"}`}, ""},
		{"extra members in function", `{"id":"c","type":"function","function":{"name":"f","arguments":"{}","strict":true}}`,
			model.ToolCall{ID: "c", Name: "f", Arguments: `{}`}, ""},
		{"null id (LiteLLM streaming)", `{"id":null,"type":"function","function":{"name":"f","arguments":"{}"}}`,
			model.ToolCall{Name: "f", Arguments: `{}`}, ""},
		{"another call type", `{"id":"c","type":"custom","function":{"name":"f","arguments":"x"}}`,
			model.ToolCall{ID: "c", Name: "f", Arguments: `x`}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var c model.ToolCall
			if err := json.Unmarshal([]byte(tt.stored), &c); err != nil {
				t.Fatal(err)
			}
			if c.ID != tt.want.ID || c.Name != tt.want.Name || c.Arguments != tt.want.Arguments {
				t.Errorf("decoded %+v, want %+v", c, tt.want)
			}
			out, err := json.Marshal(c)
			if err != nil {
				t.Fatal(err)
			}
			want := tt.rewritten
			if want == "" {
				want = tt.stored
			}
			if d := jsontest.Diff([]byte(want), out); d != "" {
				t.Errorf("written back: %s\ngot %s", d, out)
			}
		})
	}
}

func TestToolCall_ThoughtSignatureBesideTheCall(t *testing.T) {
	t.Parallel()
	stored := `{"id":"c","type":"function","function":{"name":"f","arguments":"{}"},"thought_signature":"c2ln"}`
	var c model.ToolCall
	if err := json.Unmarshal([]byte(stored), &c); err != nil {
		t.Fatal(err)
	}
	if c != (model.ToolCall{ID: "c", Name: "f", Arguments: "{}", ThoughtSignature: "c2ln"}) {
		t.Errorf("decoded %+v", c)
	}
	for _, call := range []model.ToolCall{c, {ID: "c", Name: "f", Arguments: "{}", ThoughtSignature: "c2ln"}} {
		out, err := json.Marshal(call)
		if err != nil {
			t.Fatal(err)
		}
		if d := jsontest.Diff([]byte(stored), out); d != "" {
			t.Errorf("%s\ngot %s", d, out)
		}
	}
}

func TestToolCall_ArgumentsChangedInGoAreWrittenAsAString(t *testing.T) {
	t.Parallel()
	var c model.ToolCall
	if err := json.Unmarshal([]byte(`{"id":"c","type":"function","function":{"name":"f","arguments":{"a":1}}}`), &c); err != nil {
		t.Fatal(err)
	}
	c.Arguments = `{"a":2}`
	out, _ := json.Marshal(c)
	if d := jsontest.Diff([]byte(`{"id":"c","type":"function","function":{"name":"f","arguments":"{\"a\":2}"}}`), out); d != "" {
		t.Errorf("%s\ngot %s", d, out)
	}
}

func TestToolCall_StaysComparable(t *testing.T) {
	t.Parallel()
	var a, b model.ToolCall
	_ = json.Unmarshal([]byte(`{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}`), &a)
	_ = json.Unmarshal([]byte(`{"id":"c","name":"f","arguments":"{}"}`), &b)
	if a != b || a != (model.ToolCall{ID: "c", Name: "f", Arguments: "{}"}) {
		t.Errorf("%+v != %+v", a, b)
	}
}

func TestMessage_KeepsAgnoMembersItDoesNotModel(t *testing.T) {
	t.Parallel()
	stored := `{"id":"m","role":"user","content":"look","from_history":false,"stop_after_tool_call":false,` +
		`"images":[{"id":"i","url":"https://x/a.png","detail":"high"}],"files":[{"id":"f","filename":"a.csv","content":"a,b"}],` +
		`"checkpoint_status":"RUNNING","checkpoint_created_at":1770000000,"provider_data":{"signature":"s"},` +
		`"metrics":{"input_tokens":5,"duration":0.25,"time_to_first_token":0.1,"cost":0.001},"created_at":1770000000}`
	var m model.Message
	if err := json.Unmarshal([]byte(stored), &m); err != nil {
		t.Fatal(err)
	}
	if m.Content != "look" || m.Metrics == nil || m.Metrics.InputTokens != 5 || m.Metrics.Duration != 0.25 || m.Metrics.TimeToFirstToken != 0.1 {
		t.Errorf("decoded %+v metrics %+v", m, m.Metrics)
	}
	out, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	if d := jsontest.Diff([]byte(stored), out); d != "" {
		t.Errorf("%s\ngot %s", d, out)
	}
}

func TestResponseFormat_ToolName(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("a", 70)
	for name, want := range map[string]string{
		"weather":          "weather",
		"Weather-Report_2": "Weather-Report_2",
		"my format.v1":     "my_format_v1",
		"météo":            "m__t__o",
		"":                 "structured_output",
		long:               long[:64],
	} {
		if got := (&model.ResponseFormat{Name: name}).ToolName(); got != want {
			t.Errorf("ToolName(%q) = %q, want %q", name, got, want)
		}
	}
}
