package tool_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/tool"
)

type weatherUnit string

type location struct {
	City    string `json:"city" jsonschema:"city name, e.g. Paris"`
	Country string `json:"country,omitempty"`
}

type forecastArgs struct {
	Location location    `json:"location"`
	Days     int         `json:"days" jsonschema:"number of days to forecast" enum:"1,3,7"`
	Unit     weatherUnit `json:"unit,omitempty" enum:"celsius, fahrenheit"`
	Fields   []string    `json:"fields,omitempty" enum:"temp,wind,rain"`
	Stops    []location  `json:"stops,omitempty"`
	Note     *string     `json:"note,omitempty" enum:"a,b"`
	Ignored  string      `json:"-"`
	//lint:ignore U1000 an unexported field the schema and the decoder must skip
	internal int
}

type forecast struct {
	City  string  `json:"city"`
	TempC float64 `json:"temp_c"`
}

func mustFunc[In, Out any](t testing.TB, cfg tool.FuncConfig, fn func(context.Context, In) (Out, error)) tool.Tool {
	t.Helper()
	tl, err := tool.Func(cfg, fn)
	if err != nil {
		t.Fatalf("Func: %v", err)
	}
	return tl
}

func forecastTool(t testing.TB) tool.Tool {
	return mustFunc(t, tool.FuncConfig{Name: "forecast", Description: "weather forecast"},
		func(_ context.Context, in forecastArgs) (forecast, error) {
			return forecast{City: in.Location.City, TempC: 21.5}, nil
		})
}

// schemaNode is the subset of JSON Schema the inference tests look at.
type schemaNode struct {
	Type                 any                    `json:"type"`
	Description          string                 `json:"description"`
	Properties           map[string]*schemaNode `json:"properties"`
	Required             []string               `json:"required"`
	Items                *schemaNode            `json:"items"`
	Enum                 []any                  `json:"enum"`
	AdditionalProperties *bool                  `json:"additionalProperties"`
}

func TestFunc_InfersSchemaFromArgumentType(t *testing.T) {
	t.Parallel()
	var root schemaNode
	if err := json.Unmarshal(forecastTool(t).Definition().Parameters, &root); err != nil {
		t.Fatal(err)
	}
	p := root.Properties
	tests := []struct {
		name string
		got  any
		want any
	}{
		{"root is an object", root.Type, "object"},
		{"root rejects unknown properties", *root.AdditionalProperties, false},
		{"required are fields without omitempty", strings.Join(root.Required, ","), "location,days"},
		{"nested struct is an object", p["location"].Type, "object"},
		{"nested required", strings.Join(p["location"].Required, ","), "city"},
		{"nested description from jsonschema tag", p["location"].Properties["city"].Description, "city name, e.g. Paris"},
		{"description from jsonschema tag", p["days"].Description, "number of days to forecast"},
		{"integer type", p["days"].Type, "integer"},
		{"integer enum", jsonText(t, p["days"].Enum), "[1,3,7]"},
		{"string enum trims spaces", jsonText(t, p["unit"].Enum), `["celsius","fahrenheit"]`},
		{"slice enum applies to items", jsonText(t, p["fields"].Items.Enum), `["temp","wind","rain"]`},
		{"slice of structs", p["stops"].Items.Type, "object"},
		{"pointer enum admits null", jsonText(t, p["note"].Enum), `["a","b",null]`},
		{"json:\"-\" field omitted", p["Ignored"] == nil, true},
		{"unexported field omitted", p["internal"] == nil, true},
		{"property count", len(p), 6},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if jsonText(t, tt.got) != jsonText(t, tt.want) {
				t.Errorf("got %v, want %v", jsonText(t, tt.got), jsonText(t, tt.want))
			}
		})
	}
}

func jsonText(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestFunc_CopiesConfigToDefinition(t *testing.T) {
	t.Parallel()
	cfg := tool.FuncConfig{
		Name: "deploy", Description: "deploys", Strict: true, Timeout: 3e9,
		RequiresConfirmation: true, RequiresUserInput: true, ExternalExecution: true, StopAfterCall: true,
	}
	d := mustFunc(t, cfg, func(context.Context, struct{}) (string, error) { return "", nil }).Definition()
	if d.Name != "deploy" || d.Description != "deploys" || !d.Strict || d.Timeout != 3e9 ||
		!d.RequiresConfirmation || !d.RequiresUserInput || !d.ExternalExecution || !d.StopAfterCall {
		t.Errorf("definition does not carry the config: %+v", d)
	}
	if got := string(d.Parameters); got != `{"additionalProperties":false,"required":[],"type":"object"}` {
		t.Errorf("empty struct parameters, strict = %s", got)
	}
}

func TestFunc_RejectsInvalidConstruction(t *testing.T) {
	t.Parallel()
	ok := tool.FuncConfig{Name: "t", Description: "d"}
	noop := func(context.Context, struct{ A string }) (string, error) { return "", nil }
	tests := []struct {
		name  string
		build func() error
		want  string
	}{
		{"empty name", func() error { _, err := tool.Func(tool.FuncConfig{Description: "d"}, noop); return err }, "invalid name"},
		{"name with spaces", func() error {
			_, err := tool.Func(tool.FuncConfig{Name: "get weather", Description: "d"}, noop)
			return err
		}, "invalid name"},
		{"name over 64 characters", func() error {
			_, err := tool.Func(tool.FuncConfig{Name: strings.Repeat("a", 65), Description: "d"}, noop)
			return err
		}, "invalid name"},
		{"missing description", func() error { _, err := tool.Func(tool.FuncConfig{Name: "t"}, noop); return err }, "description is required"},
		{"nil function", func() error {
			_, err := tool.Func[struct{}, string](ok, nil)
			return err
		}, "nil function"},
		{"channel field", func() error {
			_, err := tool.Func(ok, func(context.Context, struct{ C chan int }) (string, error) { return "", nil })
			return err
		}, "cannot infer"},
		{"non-object arguments", func() error {
			_, err := tool.Func(ok, func(context.Context, string) (string, error) { return "", nil })
			return err
		}, "must be a struct"},
		{"enum on struct field", func() error {
			_, err := tool.Func(ok, func(context.Context, struct {
				L location `enum:"x"`
			}) (string, error) {
				return "", nil
			})
			return err
		}, "enum tag"},
		{"enum value of wrong kind", func() error {
			_, err := tool.Func(ok, func(context.Context, struct {
				N int `enum:"one"`
			}) (string, error) {
				return "", nil
			})
			return err
		}, "enum tag on field N"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := tt.build()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want it to mention %q", err, tt.want)
			}
		})
	}
}

func TestMustFunc_PanicsOnInvalidConfig(t *testing.T) {
	t.Parallel()
	defer func() {
		if recover() == nil {
			t.Error("MustFunc did not panic on an empty name")
		}
	}()
	tool.MustFunc(tool.FuncConfig{}, func(context.Context, struct{}) (string, error) { return "", nil })
}

func TestFunc_EncodesResultForModel(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		tool tool.Tool
		want string
	}{
		{"struct is JSON", forecastTool(t), `{"city":"Paris","temp_c":21.5}`},
		{"string as is", mustFunc(t, tool.FuncConfig{Name: "s", Description: "d"},
			func(_ context.Context, in forecastArgs) (string, error) { return "sunny in " + in.Location.City, nil }),
			"sunny in Paris"},
		{"raw JSON as is", mustFunc(t, tool.FuncConfig{Name: "r", Description: "d"},
			func(context.Context, forecastArgs) (json.RawMessage, error) { return json.RawMessage(`{"a": 1}`), nil }),
			`{"a": 1}`},
		{"slice is JSON", mustFunc(t, tool.FuncConfig{Name: "l", Description: "d"},
			func(context.Context, forecastArgs) ([]int, error) { return []int{1, 2}, nil }),
			`[1,2]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := tt.tool.Call(context.Background(), json.RawMessage(`{"location":{"city":"Paris"},"days":3}`))
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("got %s, want %s", got, tt.want)
			}
		})
	}
}

func TestFunc_CallValidatesArgumentsWithoutSet(t *testing.T) {
	t.Parallel()
	called := false
	tl := mustFunc(t, tool.FuncConfig{Name: "f", Description: "d"}, func(context.Context, forecastArgs) (string, error) {
		called = true
		return "", nil
	})
	_, err := tl.Call(context.Background(), json.RawMessage(`{"days":3}`))
	if !errors.Is(err, tool.ErrInvalidArguments) {
		t.Fatalf("err = %v, want ErrInvalidArguments", err)
	}
	if called {
		t.Error("function ran with invalid arguments")
	}
}

func TestFunc_ReturnsFunctionError(t *testing.T) {
	t.Parallel()
	boom := errors.New("upstream unavailable")
	tl := mustFunc(t, tool.FuncConfig{Name: "f", Description: "d"}, func(context.Context, struct{}) (string, error) {
		return "", boom
	})
	if _, err := tl.Call(context.Background(), nil); !errors.Is(err, boom) {
		t.Fatalf("err = %v, want %v", err, boom)
	}
}

func TestFunc_ToolsOfOneTypeDoNotShareParameters(t *testing.T) {
	t.Parallel()
	a, b := forecastTool(t), forecastTool(t)
	pa := a.Definition().Parameters
	want := string(b.Definition().Parameters)
	for i := range pa {
		pa[i] = ' '
	}
	if got := string(b.Definition().Parameters); got != want {
		t.Fatalf("changing one tool's parameters changed another's: %s", got)
	}
	if got := string(forecastTool(t).Definition().Parameters); got != want {
		t.Fatalf("changing one tool's parameters changed later tools: %s", got)
	}
}
