package codemode

import (
	"encoding/json"
	"testing"
)

// FuzzDecodeSnapshot decodes arbitrary stored bytes as a snapshot: it never
// panics, always yields a doc, accepts only this version, and the owner read
// from a row that does not decode (snapshotOwner) is the owner a decode of
// the same bytes would see, so an unreadable row is checked against the
// same user as a readable one.
func FuzzDecodeSnapshot(f *testing.F) {
	for _, seed := range []string{
		`{"version":1,"owner":"alice","session_id":"s","saved_at":1,"vars":[{"name":"x","json":"1"},{"name":"f","source":"function f() {}"}],"skipped":[{"name":"m","reason":"a Map"}]}`,
		`{"version":1,"session_id":"s","vars":[]}`,
		`{"version":1,"owner":"u","session_id":"s","vars":[{"name":"f","source":"x => x ++"},{"name":"g","source":"async (a) => ({a})"},{"name":"r","source":"() => /a/ // c"}]}`,
		`{"version":1,"session_id":"s","vars":[{"name":"__cm_global__","json":"1"},{"name":"h","source":"function h() { return '__cm_fn_' }"}]}`,
		`{"version":0,"owner":"alice"}`,
		`{"version":"1","owner":"alice","vars":"x"}`,
		`{"version":1,"owner":"alice","session_id":"s","vars":[{"name":"secret","json":"\"ali`,
		`{"owner":"bob","owner":"alice","version":1}`,
		`{"OWNER":"alice","version":1}`,
		`{"owner":"alice","owner":null,"version":1}`,
		`{"owner":{"a":[1]},"version":1}`,
		`{"owner":5}`,
		"null", "[]", `"x"`, "", "{", `{"owner"`, `{"owner":`, "\x00\xff",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		doc, err := decodeSnapshot(b)
		if doc == nil {
			t.Fatalf("no doc for %q", b)
		}
		owner := snapshotOwner(b)
		if err != nil {
			if doc.Owner != owner || doc.Session != "" || doc.Vars != nil {
				t.Fatalf("unreadable %q gave %+v, want only the owner %q", b, doc, owner)
			}
			return
		}
		if doc.Version != snapshotVersion {
			t.Fatalf("%q accepted with version %d", b, doc.Version)
		}
		if owner != doc.Owner {
			t.Fatalf("%q: snapshotOwner read %q, the decode %q", b, owner, doc.Owner)
		}
		again, err := doc.marshal()
		if err != nil {
			t.Fatalf("re-encoding %q: %v", b, err)
		}
		if back, err := decodeSnapshot(again); err != nil || back.Owner != doc.Owner || back.Session != doc.Session || len(back.Vars) != len(doc.Vars) {
			t.Fatalf("%q re-encoded as %s decodes as %+v, %v", b, again, back, err)
		}
		if !json.Valid(again) {
			t.Fatalf("re-encoded %q is not JSON: %s", b, again)
		}
	})
}
