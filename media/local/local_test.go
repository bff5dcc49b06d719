package local_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/media/local"
	"github.com/agentryhq/agentry/media/mediatest"
)

func TestLocal_Conformance(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s, err := local.New(filepath.Join(dir, "media"))
	if err != nil {
		t.Fatal(err)
	}
	mediatest.Run(t, s, false)
	// nothing escaped the directory
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Fatalf("files outside the media dir: %v", entries)
	}
}

func FuzzUpload_NeverWritesOutsideTheRoot(f *testing.F) {
	for _, k := range []string{"a/b.jpg", "../x", "a/../../x", "/etc/passwd", "a\\..\\x", "sessions/ab/c.png", "./a", "a/./b"} {
		f.Add(k)
	}
	parent := f.TempDir()
	root := filepath.Join(parent, "media")
	s, err := local.New(root)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, key string) {
		if err := s.Upload(context.Background(), key, strings.NewReader("x"), 1, ""); err != nil {
			return
		}
		entries, _ := os.ReadDir(parent)
		if len(entries) != 1 || entries[0].Name() != "media" {
			t.Fatalf("key %q wrote outside the root: %v", key, entries)
		}
		_ = s.Delete(context.Background(), key)
	})
}
