package mcpserver

import (
	"testing"
	"time"
)

// The OS verified the token with its clock-skew leeway: a token the HTTP
// routes accept is accepted on /mcp too (the SDK's own expiry check, with
// no leeway, used to answer 401).
func TestAuth_TokenWithinLeewayIsAccepted(t *testing.T) {
	leeway := time.Hour
	h := newHarness(t, harnessConfig{leeway: &leeway})
	tok := token(t, "alice", time.Now().Add(-time.Minute))
	if _, err := h.verifier.Verify(tok); err != nil {
		t.Fatalf("the verifier refuses the token: %v", err)
	}
	cs, err := h.connect(t, tok)
	if err != nil {
		t.Fatalf("a token within the leeway was refused: %v", err)
	}
	if r := callTool(t, cs, "get_sessions", nil); r.IsError {
		t.Fatalf("get_sessions: %q", resultText(r))
	}
	if _, err := h.connect(t, token(t, "alice", time.Now().Add(-2*time.Hour))); err == nil {
		t.Fatal("a token expired beyond the leeway was accepted")
	}
}
