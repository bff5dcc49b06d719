package codemode_test

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentryhq/agentry/codemode"
	"github.com/agentryhq/agentry/tool"
)

type cityArgs struct {
	City string `json:"city" jsonschema:"city name"`
}

type weather struct {
	City  string  `json:"city"`
	TempC float64 `json:"temp_c"`
}

// tools returns the tools the tests call from code, and a counter of calls
// in flight at once (the highest seen).
func testTools(t testing.TB) ([]tool.Tool, *atomic.Int32) {
	t.Helper()
	var cur, peak atomic.Int32
	temps := map[string]float64{"Paris": 21.5, "Rome": 25, "Oslo": 9}
	w := tool.MustFunc(tool.FuncConfig{Name: "get_weather", Description: "Current weather in a city."},
		func(ctx context.Context, in cityArgs) (weather, error) {
			n := cur.Add(1)
			defer cur.Add(-1)
			for {
				p := peak.Load()
				if n <= p || peak.CompareAndSwap(p, n) {
					break
				}
			}
			select {
			case <-time.After(20 * time.Millisecond):
			case <-ctx.Done():
				return weather{}, ctx.Err()
			}
			tc, ok := temps[in.City]
			if !ok {
				return weather{}, errUnknownCity(in.City)
			}
			return weather{City: in.City, TempC: tc}, nil
		})
	type cmpArgs struct {
		A float64 `json:"a"`
		B float64 `json:"b"`
	}
	cmp := tool.MustFunc(tool.FuncConfig{Name: "compare", Description: "Difference a - b."},
		func(_ context.Context, in cmpArgs) (float64, error) { return in.A - in.B, nil })
	echo := tool.MustFunc(tool.FuncConfig{Name: "echo", Description: "Returns its text."},
		func(_ context.Context, in struct {
			Text string `json:"text"`
		}) (string, error) {
			return in.Text, nil
		})
	confirm := tool.MustFunc(tool.FuncConfig{Name: "delete_all", Description: "Deletes everything.", RequiresConfirmation: true},
		func(context.Context, struct{}) (string, error) { return "deleted", nil })
	return []tool.Tool{w, cmp, echo, confirm}, &peak
}

type errUnknownCity string

func (e errUnknownCity) Error() string { return "no weather for " + string(e) }

func newCM(t testing.TB, cfg codemode.Config) *codemode.CodeMode {
	t.Helper()
	if cfg.Tools == nil {
		cfg.Tools, _ = testTools(t)
	}
	cm, err := codemode.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cm.Close() })
	return cm
}

func runCell(t testing.TB, cm *codemode.CodeMode, session, code string) codemode.Cell {
	t.Helper()
	c, err := cm.Run(context.Background(), session, "", code)
	if err != nil {
		t.Fatalf("Run(%q): %v", code, err)
	}
	return c
}

func wantOK(t testing.TB, c codemode.Cell) {
	t.Helper()
	if c.Status != codemode.StatusOK {
		t.Fatalf("cell status %s, error %+v, stdout %q", c.Status, c.Error, c.Stdout)
	}
}

func resultOf(t testing.TB, c codemode.Cell) any {
	t.Helper()
	wantOK(t, c)
	var v any
	if len(c.Result) > 0 {
		if err := json.Unmarshal(c.Result, &v); err != nil {
			t.Fatalf("result %s is not JSON: %v", c.Result, err)
		}
	}
	return v
}

func jsonText(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
