package runlog_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/agentryhq/agentry/runlog"
)

// Two appenders of one run at once (two replicas, or a retried write racing
// the first) each store their events: the second does not collide with
// the first's sequence number and fail, and the numbering stays gapless.
func TestAppend_ConcurrentAppendersOfOneRunLoseNothing(t *testing.T) {
	eachSQL(t, func(t *testing.T, a, b *runlog.Log) {
		ctx := context.Background()
		const writers, each = 4, 15
		runID := "run-race"
		var wg sync.WaitGroup
		errs := make(chan error, writers*each)
		for w := range writers {
			l := a
			if w%2 == 1 {
				l = b
			}
			wg.Go(func() {
				for i := range each {
					ev := []runlog.Pending{{Event: "RunContent", Data: fmt.Appendf(nil, `{"w":%d,"i":%d}`, w, i)}}
					if err := l.Append(ctx, runID, 1, ev, nil); err != nil {
						errs <- err
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatalf("append: %v", err)
		}
		got, err := a.Read(ctx, runID, -1, writers*each+1)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != writers*each {
			t.Fatalf("the log holds %d events, want %d", len(got), writers*each)
		}
		checkSeq(t, got, 0)
		seen := map[string]bool{}
		for _, r := range got {
			if seen[string(r.Data)] {
				t.Fatalf("event %s stored twice", r.Data)
			}
			seen[string(r.Data)] = true
		}
	})
}
