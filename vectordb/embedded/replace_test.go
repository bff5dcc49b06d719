package embedded

import (
	"path/filepath"
	"testing"

	"github.com/agentryhq/agentry/vectordb/vectordbtest"
)

// Replaces of one content's rows at the same time by two processes on
// one file leave one replace's rows, and each store's graphs find them.
func TestReplaceContent_ConcurrentReplacesOnOneFileLeaveOneSet(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "v.db")
	a, b := openAt(t, path), openAt(t, path)
	defer a.Close()
	defer b.Close()
	vectordbtest.ConcurrentReplaces(t, a, b)
}
