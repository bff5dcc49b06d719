package sqlite_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/db/sqlite"
)

func TestOpen_DirectoryPathSaysItIsADirectory(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	_, err := sqlite.Open(ctx, sqlite.Config{Path: dir})
	if err == nil || !strings.Contains(err.Error(), dir+" is a directory") || !strings.Contains(err.Error(), filepath.Join(dir, "agentry.db")) {
		t.Fatalf("error = %v, want one saying %s is a directory and suggesting a file in it", err, dir)
	}
}
