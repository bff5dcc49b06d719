package agent

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/agentryhq/agentry/model"
	"github.com/agentryhq/agentry/model/modeltest"
	"github.com/agentryhq/agentry/model/openai"
	"github.com/agentryhq/agentry/model/scripted"
	"github.com/agentryhq/agentry/run"
)

func named(t *testing.T, id, provider string, turns ...scripted.Turn) *scripted.Model {
	t.Helper()
	m, err := scripted.New(scripted.Config{ID: id, Provider: provider, Turns: turns})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestFallbackModels_NextModelAnswersAndTheRunSaysWhich(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		primary   scripted.Turn
		cfg       func(a, b model.Model) Config
		wantModel string
		wantErr   error
	}{
		{"rate limit falls back", scripted.Turn{Error: "slow down", ErrorKind: "rate_limit"},
			func(a, b model.Model) Config { return Config{FallbackModels: []model.Model{a, b}} }, "backup-a", nil},
		{"server error falls back", scripted.Turn{Error: "503", ErrorKind: "server"},
			func(a, b model.Model) Config { return Config{FallbackModels: []model.Model{a}} }, "backup-a", nil},
		{"context length falls back to the overflow list", scripted.Turn{Error: "too long", ErrorKind: "context_length"},
			func(a, b model.Model) Config {
				return Config{FallbackConfig: &model.FallbackConfig{OnError: []model.Model{a}, OnContextOverflow: []model.Model{b}}}
			}, "backup-b", nil},
		{"bad request is not hidden", scripted.Turn{Error: "bad schema", ErrorKind: "bad_request"},
			func(a, b model.Model) Config { return Config{FallbackModels: []model.Model{a}} }, "primary", model.ErrBadRequest},
		{"a failure after output does not switch models", scripted.Turn{Content: "partial answer", Error: "cut", ErrorKind: "server"},
			func(a, b model.Model) Config { return Config{FallbackModels: []model.Model{a}} }, "primary", model.ErrServer},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			primary := named(t, "primary", "PrimaryCo", tc.primary)
			a := named(t, "backup-a", "BackupCo", scripted.Turn{Content: "answer from a"})
			b := named(t, "backup-b", "OtherCo", scripted.Turn{Content: "answer from b"})
			cfg := tc.cfg(a, b)
			cfg.Model = primary
			out, err := mustAgent(t, cfg).Run(context.Background(), run.TextInput("hi"))
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) || out.Status != run.StatusError {
					t.Fatalf("err %v status %s, want %v and ERROR", err, out.Status, tc.wantErr)
				}
			} else if err != nil || out.Status != run.StatusCompleted {
				t.Fatalf("err %v status %s", err, out.Status)
			}
			if out.Model != tc.wantModel {
				t.Errorf("run model %q, want %q", out.Model, tc.wantModel)
			}
			if tc.wantErr != nil {
				return
			}
			if out.ModelProvider == "PrimaryCo" {
				t.Errorf("run model_provider still names the primary")
			}
			d := out.Metrics.Details["model"]
			if len(d) != 1 || d[0].ID != tc.wantModel || d[0].InputTokens == 0 {
				t.Errorf("metrics.details.model = %+v", d)
			}
			raw, _ := json.Marshal(out.Metrics)
			var back map[string]any
			_ = json.Unmarshal(raw, &back)
			if _, ok := back["details"].(map[string]any)["model"]; !ok {
				t.Errorf("metrics JSON lacks details.model: %s", raw)
			}
		})
	}
}

func TestFallbackModels_AllFailingReturnsThePrimaryError(t *testing.T) {
	t.Parallel()
	primary := named(t, "primary", "P", scripted.Turn{Error: "first", ErrorKind: "rate_limit"})
	b := named(t, "b", "B", scripted.Turn{Error: "second", ErrorKind: "server"})
	out, err := mustAgent(t, Config{Model: primary, FallbackModels: []model.Model{b}}).Run(context.Background(), run.TextInput("hi"))
	if !errors.Is(err, model.ErrRateLimit) || out.Model != "primary" {
		t.Fatalf("err %v model %q, want the primary's rate limit", err, out.Model)
	}
}

func TestMetrics_MessageTimingsAndRunBreakdown(t *testing.T) {
	t.Parallel()
	m := named(t, "m1", "P", scripted.Turn{Content: "hello there"})
	out, err := mustAgent(t, Config{Model: m}).Run(context.Background(), run.TextInput("hi"))
	if err != nil {
		t.Fatal(err)
	}
	var assistant *model.Message
	for i := range out.Messages {
		if out.Messages[i].Role == model.RoleAssistant {
			assistant = &out.Messages[i]
		}
	}
	if assistant == nil || assistant.Metrics == nil || assistant.Metrics.Duration <= 0 || assistant.Metrics.TimeToFirstToken <= 0 {
		t.Fatalf("assistant message metrics lack duration/time_to_first_token: %+v", assistant)
	}
	if out.Metrics.Usage.Duration != 0 {
		t.Errorf("message durations leaked into the run's token block: %+v", out.Metrics)
	}
	if d := out.Metrics.Details["model"]; len(d) != 1 || d[0].ID != "m1" || d[0].Provider != "P" || d[0].OutputTokens == 0 || d[0].Duration != 0 {
		t.Errorf("details %+v", d)
	}
}

// A primary that cannot be reached at all (a refused connection, here a
// real one) is what fallback models are for: the next model answers.
func TestFallbackModels_AnUnreachablePrimaryFallsBack(t *testing.T) {
	t.Parallel()
	refused := modeltest.RefusedAddr(t)
	primary, err := openai.New(openai.Config{APIKey: "sk-test", BaseURL: "http://" + refused + "/v1", Model: "gpt-4o-mini"})
	if err != nil {
		t.Fatal(err)
	}
	backup := named(t, "backup-a", "BackupCo", scripted.Turn{Content: "answer from a"})
	out, err := mustAgent(t, Config{Model: primary, FallbackModels: []model.Model{backup}}).Run(context.Background(), run.TextInput("hi"))
	if err != nil || out.Status != run.StatusCompleted || out.ContentString() != "answer from a" || out.Model != "backup-a" {
		t.Fatalf("err %v status %s content %q model %q, want backup-a's answer", err, out.Status, out.ContentString(), out.Model)
	}
}
