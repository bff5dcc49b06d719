package tool_test

import (
	"context"
	"testing"

	"github.com/agentryhq/agentry/model"
	"github.com/agentryhq/agentry/tool"
)

func BenchmarkFuncConstruction(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := tool.Func(tool.FuncConfig{Name: "forecast", Description: "weather forecast"},
			func(_ context.Context, in forecastArgs) (forecast, error) {
				return forecast{City: in.Location.City}, nil
			}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkExecute(b *testing.B) {
	s, err := tool.NewSet([]tool.Tool{forecastTool(b)})
	if err != nil {
		b.Fatal(err)
	}
	c := model.ToolCall{ID: "c", Name: "forecast", Arguments: `{"location":{"city":"Paris","country":"FR"},"days":3,"unit":"celsius","fields":["temp","wind"]}`}
	for _, bc := range []struct {
		name string
		ctx  func() (context.Context, context.CancelFunc)
	}{
		{"background", func() (context.Context, context.CancelFunc) { return context.Background(), func() {} }},
		{"cancellable", func() (context.Context, context.CancelFunc) { return context.WithCancel(context.Background()) }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			ctx, cancel := bc.ctx()
			defer cancel()
			b.ReportAllocs()
			for b.Loop() {
				if res := s.Execute(ctx, c); res.Err != nil {
					b.Fatal(res.Err)
				}
			}
		})
	}
}
