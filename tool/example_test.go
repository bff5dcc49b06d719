package tool_test

import (
	"context"
	"fmt"

	"github.com/agentryhq/agentry/model"
	"github.com/agentryhq/agentry/tool"
)

func ExampleFunc() {
	type args struct {
		City string `json:"city" jsonschema:"city name"`
		Unit string `json:"unit,omitempty" enum:"celsius,fahrenheit"`
	}
	weather := tool.MustFunc(tool.FuncConfig{Name: "get_weather", Description: "Current weather in a city"},
		func(_ context.Context, in args) (string, error) {
			return "Sunny in " + in.City, nil
		})
	fmt.Println(string(weather.Definition().Parameters))

	tools, err := tool.NewSet([]tool.Tool{weather})
	if err != nil {
		panic(err)
	}
	ok := tools.Execute(context.Background(), model.ToolCall{ID: "1", Name: "get_weather", Arguments: `{"city":"Lyon"}`})
	fmt.Println(ok.Content, ok.IsError())
	bad := tools.Execute(context.Background(), model.ToolCall{ID: "2", Name: "get_weather", Arguments: `{"city":"Lyon","unit":"kelvin"}`})
	fmt.Println(bad.Content, bad.IsError())
	// Output:
	// {"type":"object","properties":{"city":{"type":"string","description":"city name"},"unit":{"type":"string","enum":["celsius","fahrenheit"]}},"required":["city"],"additionalProperties":false}
	// Sunny in Lyon false
	// tool: invalid arguments for get_weather: at /unit: value must be one of 'celsius', 'fahrenheit' true
}
