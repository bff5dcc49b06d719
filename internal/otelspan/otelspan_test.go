package otelspan_test

import (
	"context"
	"testing"

	"github.com/agentryhq/agentry/internal/otelspan"
)

// TestStart_UntracedAllocatesNothing: with no recording span in the
// context, Start opens nothing and allocates nothing.
func TestStart_UntracedAllocatesNothing(t *testing.T) {
	ctx := context.Background()
	n := testing.AllocsPerRun(1000, func() {
		c, span := otelspan.Start(ctx, "retrieval", "retrieval")
		if span != nil || c != ctx {
			t.Fatal("a span without tracing")
		}
		otelspan.End(span, nil)
	})
	if n != 0 {
		t.Errorf("%v allocations", n)
	}
}
