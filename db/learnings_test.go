package db

import (
	"crypto/sha256"
	"encoding/hex"
	"testing"
)

func TestEntityLearningID_AgnoKeys(t *testing.T) {
	sum := sha256.Sum256([]byte("alice@example.com"))
	digest := hex.EncodeToString(sum[:])[:16]
	for _, c := range []struct{ ns, user, typ, id, want string }{
		{"user", "alice@example.com", "company", "acme", "entity_user_" + digest + "_company_acme"},
		{"user", "", "company", "acme", ""},
		{"", "alice", "company", "acme", "entity_global_company_acme"},
		{"team-x", "alice", "person", "bob", "entity_team-x_person_bob"},
		{"user", "alice", "", "acme", ""},
	} {
		if got := EntityLearningID(c.ns, c.user, c.typ, c.id); got != c.want {
			t.Errorf("EntityLearningID(%q, %q, %q, %q) = %q, want %q", c.ns, c.user, c.typ, c.id, got, c.want)
		}
	}
	if len(digest) != 16 || EntityLearningID("user", "alice", "t", "i") == EntityLearningID("user", "bob", "t", "i") {
		t.Fatal("two users share an entity key")
	}
}
