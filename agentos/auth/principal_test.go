package auth

import (
	"context"
	"strings"
	"testing"
)

func TestPrincipalCan_MatchesScopeForms(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name                 string
		scopes               []string
		admin                bool
		resource, id, action string
		want                 bool
	}{
		{"exact collection scope", []string{"agents:read"}, false, "agents", "", "read", true},
		{"collection scope covers one object", []string{"agents:run"}, false, "agents", "a1", "run", true},
		{"other action denied", []string{"agents:read"}, false, "agents", "a1", "run", false},
		{"other resource denied", []string{"agents:read"}, false, "sessions", "", "read", false},
		{"resource wildcard", []string{"agents:*"}, false, "agents", "a1", "run", true},
		{"object scope", []string{"agents:a1:run"}, false, "agents", "a1", "run", true},
		{"object scope other object", []string{"agents:a1:run"}, false, "agents", "a2", "run", false},
		{"object scope never covers collection", []string{"agents:a1:read"}, false, "agents", "", "read", false},
		{"object wildcard action", []string{"agents:a1:*"}, false, "agents", "a1", "read", true},
		{"any object one action", []string{"agents:*:run"}, false, "agents", "a9", "run", true},
		{"bare wildcard is not admin", []string{"*"}, false, "agents", "", "read", false},
		{"empty segment", []string{"agents:"}, false, "agents", "", "", false},
		{"admin flag", nil, true, "memories", "", "write", true},
		{"no scopes", nil, false, "agents", "", "read", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := &Principal{Scopes: tt.scopes, Admin: tt.admin}
			if got := p.Can(tt.resource, tt.id, tt.action); got != tt.want {
				t.Errorf("Can(%s, %q, %s) with %v = %v, want %v", tt.resource, tt.id, tt.action, tt.scopes, got, tt.want)
			}
		})
	}
	var nilP *Principal
	if nilP.Can("agents", "", "read") {
		t.Error("nil principal allowed")
	}
}

// CanSome agrees with Can on some object: a per-object grant counts, a grant
// of another resource or action does not.
func TestPrincipalCanSome_AnyObject(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		scopes []string
		admin  bool
		want   bool
	}{
		{[]string{"sessions:read"}, false, true},
		{[]string{"sessions:s1:read"}, false, true},
		{[]string{"sessions:*:read"}, false, true},
		{[]string{"sessions:s1:*"}, false, true},
		{[]string{"*:read"}, false, true},
		{[]string{"sessions:*"}, false, true},
		{[]string{"sessions:s1:write"}, false, false},
		{[]string{"agents:read", "sessions:write"}, false, false},
		{[]string{"sessions::read"}, false, false},
		{[]string{"sessions:s1:read:x"}, false, false},
		{[]string{"*"}, false, false},
		{nil, false, false},
		{nil, true, true},
	} {
		p := &Principal{Scopes: c.scopes, Admin: c.admin}
		if got := p.CanSome("sessions", "read"); got != c.want {
			t.Errorf("CanSome(sessions, read) with %v (admin %v) = %v, want %v", c.scopes, c.admin, got, c.want)
		}
		// Whatever CanSome says, Can on some id agrees.
		if p.Can("sessions", "s1", "read") && !p.CanSome("sessions", "read") {
			t.Errorf("%v: Can on s1 but not CanSome", c.scopes)
		}
	}
	if (*Principal)(nil).CanSome("sessions", "read") {
		t.Error("nil principal allowed")
	}
}

func TestContext_RoundTripsPrincipal(t *testing.T) {
	t.Parallel()
	if _, ok := FromContext(context.Background()); ok {
		t.Fatal("principal in empty context")
	}
	p := &Principal{UserID: "u"}
	got, ok := FromContext(NewContext(context.Background(), p))
	if !ok || got != p {
		t.Fatalf("got %v %v", got, ok)
	}
}

func TestAuthenticator_SecurityKeyAndJWT(t *testing.T) {
	t.Parallel()
	v := mainVerifier(t)
	a, err := NewAuthenticator("operator-key-0123456789", v)
	if err != nil {
		t.Fatal(err)
	}
	if !a.Enabled() {
		t.Fatal("not enabled")
	}
	p, err := a.Authenticate("operator-key-0123456789")
	if err != nil || !p.Admin {
		t.Fatalf("security key: %v %+v", err, p)
	}
	if _, err := a.Authenticate(""); err != ErrMissingCredentials {
		t.Fatalf("empty token: %v", err)
	}
	if _, err := a.Authenticate("operator-key-0123456780"); err == nil {
		t.Fatal("wrong key accepted")
	}
	open, err := NewAuthenticator("", nil)
	if err != nil || open.Enabled() || (*Authenticator)(nil).Enabled() {
		t.Fatal("empty authenticator enabled")
	}
	keyOnly, err := NewAuthenticator("k-0123456789abcdef", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := keyOnly.Authenticate("x"); err == nil {
		t.Fatal("wrong key accepted without jwt")
	}
}

func TestNewAuthenticator_RefusesShortSecurityKeys(t *testing.T) {
	t.Parallel()
	for _, key := range []string{"Q", "hunter2", "zyxwvutsrqponml"} {
		_, err := NewAuthenticator(key, nil)
		if err == nil {
			t.Errorf("%d-byte security key accepted", len(key))
			continue
		}
		if strings.Contains(err.Error(), key) {
			t.Errorf("error %q contains the key", err)
		}
	}
	if _, err := NewAuthenticator("0123456789abcdef", nil); err != nil {
		t.Errorf("16-byte key refused: %v", err)
	}
}
