package pgvector

import (
	"testing"

	"github.com/agentryhq/agentry/vectordb/vectordbtest"
)

// Replaces of one content's rows at the same time (two replicas indexing
// one upload) leave one replace's rows: each takes the content's lock, so
// the later one's delete sees the earlier one's rows. Without it, each
// delete ran before the other's rows were committed and both sets stayed.
func TestReplaceContent_ConcurrentReplacesLeaveOneSet(t *testing.T) {
	vectordbtest.ConcurrentReplaces(t, openStore(t))
}
