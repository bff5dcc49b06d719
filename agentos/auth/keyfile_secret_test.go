package auth

import (
	"path/filepath"
	"strings"
	"testing"
)

// An entry taken for a path by a separator alone may be a secret (an
// unpadded base64 secret holds "/"): the errors refusing it, which end in
// the server's start-up log, named it in full. They give its length
// instead; an entry shaped like a path beyond doubt is still named.
func TestLoadKey_ErrorsDoNotShowAnEntryThatMayBeASecret(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	secret := "q7/Zr1xW3mKp9TfY2bLs8NcVd4HgJ0eAuQ" // unpadded base64: not a padded secret
	if !LooksLikePath(secret) {
		t.Fatalf("%q is not taken for a path: this test no longer covers the case", secret)
	}
	_, err := LoadKey("", secret, dir)
	if err == nil {
		t.Fatal("LoadKey accepted a path-like entry naming no file")
	}
	if strings.Contains(err.Error(), secret) || strings.Contains(err.Error(), "q7/Zr1") {
		t.Fatalf("LoadKey's error shows the entry: %v", err)
	}
	if !strings.Contains(err.Error(), "34 characters") {
		t.Fatalf("LoadKey's error does not say which entry by its length: %v", err)
	}
	if _, err := ParseKey("", secret); err == nil || strings.Contains(err.Error(), "q7/Zr1") {
		t.Fatalf("ParseKey's error shows the entry: %v", err)
	}
	// A directory by that name: not a regular file, still not shown.
	writeFile(t, dir, filepath.Join(secret, "x"), []byte("x"))
	if _, err := LoadKey("", secret, dir); err == nil || strings.Contains(err.Error(), "q7/Zr1") || !strings.Contains(err.Error(), "not a regular file") {
		t.Fatalf("LoadKey of a directory: %v", err)
	}
	// A path beyond doubt is named, so the operator sees which file.
	_, err = LoadKey("", "./keys/missing.pem", dir)
	if err == nil || !strings.Contains(err.Error(), `"./keys/missing.pem"`) || !strings.Contains(err.Error(), "missing.pem: no such file") {
		t.Fatalf("LoadKey of a missing key file: %v", err)
	}
}
