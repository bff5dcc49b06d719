package local_test

import (
	"os"
	"path/filepath"
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
