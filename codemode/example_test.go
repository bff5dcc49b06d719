package codemode_test

import (
	"context"
	"fmt"

	"github.com/agentryhq/agentry/codemode"
	"github.com/agentryhq/agentry/tool"
)

func Example() {
	type cityArgs struct {
		City string `json:"city"`
	}
	weather := tool.MustFunc(tool.FuncConfig{Name: "get_weather", Description: "Temperature in a city, in °C."},
		func(_ context.Context, in cityArgs) (int, error) {
			return map[string]int{"Paris": 21, "Rome": 25}[in.City], nil
		})
	cm, err := codemode.New(codemode.Config{Tools: []tool.Tool{weather}})
	if err != nil {
		panic(err)
	}
	defer cm.Close()
	// In an agent: agent.Config{Tools: cm.Tools()}; the model calls execute.
	// Here, two cells of one session, run directly:
	ctx := context.Background()
	cell, _ := cm.Run(ctx, "session-1", "", `const temps = await Promise.all(["Paris", "Rome"].map(city => get_weather({city})))`)
	fmt.Println(cell.Status)
	cell, _ = cm.Run(ctx, "session-1", "", `Math.max(...temps)`)
	fmt.Println(cell.JSON())
	// Output:
	// ok
	// {"stdout":"","result":25,"status":"ok","truncated":false,"execution_count":2}
}
