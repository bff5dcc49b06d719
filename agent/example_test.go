package agent_test

import (
	"context"
	"fmt"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/model/scripted"
	"github.com/agentryhq/agentry/run"
	"github.com/agentryhq/agentry/tool"
)

type cityArgs struct {
	City string `json:"city" jsonschema:"the city"`
}

func Example() {
	weather := tool.MustFunc(tool.FuncConfig{Name: "get_weather", Description: "Returns the weather in a city."},
		func(_ context.Context, in cityArgs) (string, error) { return "sunny in " + in.City, nil })
	m := scripted.MustNew(scripted.Config{Turns: []scripted.Turn{
		{ToolCalls: []scripted.ToolCall{{Name: "get_weather", Args: map[string]any{"city": "Paris"}}}},
		{Content: "It is sunny in Paris."},
	}})
	a, err := agent.New(agent.Config{Name: "Weather", Model: m, Tools: []tool.Tool{weather}})
	if err != nil {
		panic(err)
	}
	for ev, err := range a.Stream(context.Background(), run.TextInput("Weather in Paris?")) {
		if err != nil {
			panic(err)
		}
		switch ev.Event {
		case run.EventToolCallCompleted:
			fmt.Printf("%s(%s) = %s\n", ev.Tool.ToolName, ev.Tool.ToolArgs, ev.Tool.Result)
		case run.EventRunContent:
			fmt.Print(ev.Content)
		case run.EventRunCompleted:
			fmt.Println()
		}
	}
	// Output:
	// get_weather({"city":"Paris"}) = sunny in Paris
	// It is sunny in Paris.
}

func ExampleAgent_Run() {
	a, _ := agent.New(agent.Config{Model: scripted.Reply("Hello!")})
	out, err := a.Run(context.Background(), run.TextInput("hi"))
	fmt.Println(out.Status, out.Content, err)
	// Output: COMPLETED Hello! <nil>
}
