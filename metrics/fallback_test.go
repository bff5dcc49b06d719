package metrics_test

import (
	"context"
	"testing"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/metrics"
	"github.com/agentryhq/agentry/model"
	"github.com/agentryhq/agentry/model/scripted"
	"github.com/agentryhq/agentry/run"
)

func down() model.Model {
	return scripted.MustNew(scripted.Config{ID: "primary", Turns: []scripted.Turn{{Error: "down", ErrorKind: "server"}}})
}

func answers(id string) model.Model {
	return scripted.MustNew(scripted.Config{ID: id, Turns: []scripted.Turn{{Content: "ok"}}})
}

func runOnce(t *testing.T, m *metrics.Metrics, cfg agent.Config) {
	t.Helper()
	a, err := agent.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	out, err := m.Runner(a).Run(context.Background(), run.TextInput("x"))
	if err != nil || out.Status != run.StatusCompleted {
		t.Fatalf("run: %v (%+v)", err, out)
	}
}

// Instrument wrapped FallbackModels in place, in the caller's slice: two
// configurations sharing one list (as a Go caller may build them) got its
// models wrapped twice, and each fallback call was counted twice.
func TestInstrument_SharedFallbackListIsCountedOnce(t *testing.T) {
	t.Parallel()
	m := metrics.New()
	fallback := answers("fb")
	shared := []model.Model{fallback}
	first := agent.Config{ID: "one", Model: down(), FallbackModels: shared}
	second := agent.Config{ID: "two", Model: down(), FallbackModels: shared}
	m.Instrument(&first)
	m.Instrument(&second)
	if shared[0] != fallback {
		t.Error("Instrument changed the caller's FallbackModels")
	}
	runOnce(t, m, second)
	if s, ok := value(scrape(t, m), "agentry_model_call_duration_seconds", map[string]string{"model": "fb", "outcome": "ok"}); !ok || s.Histogram.GetSampleCount() != 1 {
		t.Errorf("fallback calls counted: %v; want 1", s)
	}
}

// The models of a FallbackConfig (which wins over FallbackModels) were not
// instrumented: a run that fell back to one showed no call to it and none of
// its tokens.
func TestInstrument_FallbackConfigModelsAreCounted(t *testing.T) {
	t.Parallel()
	m := metrics.New()
	onError := []model.Model{answers("fb-error")}
	cfg := agent.Config{ID: "three", Model: down(), FallbackConfig: &model.FallbackConfig{OnError: onError}}
	orig := cfg.FallbackConfig
	m.Instrument(&cfg)
	if orig.OnError[0] != onError[0] {
		t.Error("Instrument changed the caller's FallbackConfig")
	}
	runOnce(t, m, cfg)
	fams := scrape(t, m)
	if s, ok := value(fams, "agentry_model_call_duration_seconds", map[string]string{"model": "fb-error", "outcome": "ok"}); !ok || s.Histogram.GetSampleCount() != 1 {
		t.Errorf("FallbackConfig calls counted: %v; want 1", s)
	}
	if _, ok := value(fams, "agentry_model_tokens_total", map[string]string{"model": "fb-error"}); !ok {
		t.Errorf("no tokens of the fallback: %v", fams["agentry_model_tokens_total"])
	}
}

// A nil fallback is the caller's mistake for agent.New to name; Instrument
// wrapped it into a non-nil model that failed only when first called.
func TestInstrument_LeavesANilFallbackForAgentNewToRefuse(t *testing.T) {
	t.Parallel()
	cfg := agent.Config{Model: answers("m"), FallbackModels: []model.Model{nil}}
	metrics.New().Instrument(&cfg)
	if a, err := agent.New(cfg); err == nil {
		t.Fatalf("agent.New accepted a nil fallback after Instrument: %v", a)
	}
}
