package guardrail

import (
	"context"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/run"
)

// A Go map (or slice) holding itself was walked forever: the stack
// overflow is fatal, so one such input ended the whole server. Each
// container is walked once; the masked copy holds itself where the input
// did.
func TestPII_SelfContainingValueIsWalkedOnce(t *testing.T) {
	t.Parallel()
	g := mustPII(t, PIIConfig{})
	m := map[string]any{"email": "john@example.com"}
	m["self"] = m
	s := []any{"555-123-4567", nil}
	s[1] = s
	m["list"] = s
	in := &run.Input{InputContent: m}
	err := g.PreRun(context.Background(), in)
	if err == nil || !strings.Contains(err.Error(), "PII") {
		t.Fatalf("PreRun = %v, want PII detected", err)
	}
	masker := mustPII(t, PIIConfig{Mask: true})
	if err := masker.PreRun(context.Background(), in); err != nil {
		t.Fatal(err)
	}
	out, ok := in.InputContent.(map[string]any)
	if !ok {
		t.Fatalf("masked content is %T", in.InputContent)
	}
	if out["email"] != strings.Repeat("*", len("john@example.com")) {
		t.Errorf("email = %v", out["email"])
	}
	self, _ := out["self"].(map[string]any)
	if self == nil || self["email"] != out["email"] {
		t.Errorf("the masked copy's self member is not itself masked: %v", out["self"])
	}
	list, _ := out["list"].([]any)
	if len(list) != 2 || list[0] != strings.Repeat("*", 12) {
		t.Fatalf("list = %v", out["list"])
	}
	if inner, _ := list[1].([]any); len(inner) != 2 || inner[0] != list[0] {
		t.Errorf("the masked list's self element = %v", list[1])
	}
	// and the prompt-injection walk over it ends too
	m["x"] = "jailbreak"
	if err := NewPromptInjection(nil).PreRun(context.Background(), &run.Input{InputContent: m}); err == nil {
		t.Error("injection in a self-containing map passed")
	}
	// two keys masking alike make the content JSON text: it ends too
	k := map[string]any{"a@example.com": 1, "b@example.com": 2}
	k["me"] = k
	if v, ok := masker.redactValue(k).(string); !ok || strings.Contains(v, "example") {
		t.Errorf("merged masking = %v", v)
	}
}
