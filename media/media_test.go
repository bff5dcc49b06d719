package media_test

import (
	"bytes"
	"context"
	"mime"
	"path/filepath"
	"testing"

	"github.com/agentryhq/agentry/media"
	"github.com/agentryhq/agentry/media/local"
)

func newLocal(t *testing.T) *local.Storage {
	t.Helper()
	s, err := local.New(filepath.Join(t.TempDir(), "media"))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// The MIME tables a machine has (/etc/mime.types, the freedesktop globs)
// map some types only to extensions that are not a key's (".7z.001" is
// the last of application/x-7z-compressed's on Debian): such content is
// stored without an extension, never refused.
func TestPut_ATypeWhoseExtensionIsNoKeyNameIsStoredWithoutOne(t *testing.T) {
	t.Parallel()
	const typ = "application/x-agentry-test-split-archive"
	if err := mime.AddExtensionType(".agentry-test.001", typ); err != nil {
		t.Fatal(err)
	}
	s := newLocal(t)
	owner := media.Owner{DB: "db", User: "alice", Session: "s1"}
	content := []byte("7z archive part")
	for _, name := range []string{"", "archive", "archive.7z.001-part"} {
		ref, err := media.Put(context.Background(), s, owner, "file", typ, name, content)
		if err != nil {
			t.Fatalf("Put(%q): %v", name, err)
		}
		if ref.MediaID != ref.ContentHash {
			t.Fatalf("Put(%q) named the object %s", name, ref.MediaID)
		}
		if got, err := media.Get(context.Background(), s, ref); err != nil || !bytes.Equal(got, content) {
			t.Fatalf("Get: %q, %v", got, err)
		}
	}
	// one of the type's extensions that a name may end in is taken
	const split = "application/x-agentry-test-split"
	for _, ext := range []string{".agentrysp", ".agentrysp.001"} {
		if err := mime.AddExtensionType(ext, split); err != nil {
			t.Fatal(err)
		}
	}
	ref, err := media.Put(context.Background(), s, owner, "file", split, "", content)
	if err != nil || ref.MediaID != ref.ContentHash+".agentrysp" {
		t.Fatalf("Put: %+v, %v", ref, err)
	}
}
