package workflow

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/run"
)

// A selector gives a name or a list of names; one that builds its list
// from dynamic values (the session state, additional_data) is list(dyn) to
// the type checker, and New must take it. Its elements are checked when it
// is evaluated.
func TestRouter_SelectorExprListOfDynamicValues(t *testing.T) {
	t.Parallel()
	wf := mustNew(t, Config{ID: "dyn-routes", Steps: []Step{{Name: "r", Router: &Router{
		SelectorExpr: `"extra" in session_state ? [session_state.route, session_state.extra] : [session_state.route]`,
		Choices:      []Step{fn("a"), fn("b"), fn("c")}}}}})
	out, err := wf.Run(context.Background(), run.TextInput("in"), agent.WithSessionState(map[string]any{"route": "b"}))
	if err != nil || out.ContentString() != "in>b" {
		t.Fatalf("run = %v, %v; want in>b", out.Content, err)
	}
	out, err = wf.Run(context.Background(), run.TextInput("in"), agent.WithSessionState(map[string]any{"route": "c", "extra": "a"}))
	if err != nil || out.ContentString() != "in>c>a" {
		t.Fatalf("run = %v, %v; want in>c>a", out.Content, err)
	}
	// An element that is not a name fails the run, saying so.
	out, err = wf.Run(context.Background(), run.TextInput("in"), agent.WithSessionState(map[string]any{"route": 3}))
	if err == nil || out.Status != run.StatusError || !strings.Contains(out.ContentString(), "not a step name") {
		t.Fatalf("run = %s %v, %v; want ERROR naming the bad value", out.Status, out.Content, err)
	}
	// A list of another type is still refused at New.
	_, err = New(Config{Steps: []Step{{Router: &Router{SelectorExpr: `[1, 2]`, Choices: []Step{fn("a")}}}}})
	if !errors.Is(err, ErrExpression) || !strings.Contains(err.Error(), "list(int)") {
		t.Errorf("New with a list(int) selector = %v", err)
	}
}
