package model

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestParams_CheckNamesEveryUnsupportedParam(t *testing.T) {
	t.Parallel()
	temp, seed := 0.5, int64(3)
	p := Params{Temperature: &temp, Seed: &seed, ExtraBody: map[string]any{"x": 1}}
	err := p.Check("Acme", ParamTemperature)
	if !errors.Is(err, ErrUnsupportedParam) {
		t.Fatalf("err = %v, want ErrUnsupportedParam", err)
	}
	if got := err.Error(); got != "Acme: model: parameter not supported by this provider: seed, extra_body (supported: temperature); remove it from the model's parameters" {
		t.Errorf("message %q", got)
	}
	if err := p.Check("Acme", ParamTemperature, ParamSeed, ParamExtraBody); err != nil {
		t.Errorf("all supported: %v", err)
	}
}

func TestParams_ForLetsTheRequestWin(t *testing.T) {
	t.Parallel()
	a, b, yes := 0.1, 0.9, true
	p := Params{Temperature: &a, MaxTokens: 10, ToolChoice: "auto"}
	got := p.For(&Request{Temperature: &b, ToolChoice: "none", ParallelToolCalls: &yes})
	if *got.Temperature != 0.9 || got.MaxTokens != 10 || got.ToolChoice != "none" || !*got.ParallelToolCalls {
		t.Errorf("effective params %+v", got)
	}
}

func TestParams_MergeBodySetsTopLevelKeys(t *testing.T) {
	t.Parallel()
	p := Params{ExtraBody: map[string]any{"b": []int{1}, "a": "<x>"}}
	got, err := p.MergeBody([]byte(`{"a":1,"c":true}`))
	if err != nil || string(got) != `{"a":"<x>","b":[1],"c":true}` {
		t.Errorf("got %s, %v", got, err)
	}
	if _, err := p.MergeBody([]byte(`[1]`)); err == nil {
		t.Error("a non-object body must be an error")
	}
}

func TestParams_WithTimeout(t *testing.T) {
	t.Parallel()
	p := Params{Timeout: time.Minute}
	ctx, cancel := p.WithTimeout(context.Background())
	defer cancel()
	if _, ok := ctx.Deadline(); !ok {
		t.Error("no deadline with a timeout set")
	}
	var none Params
	ctx2, cancel2 := none.WithTimeout(context.Background())
	defer cancel2()
	if _, ok := ctx2.Deadline(); ok {
		t.Error("deadline without a timeout")
	}
}
