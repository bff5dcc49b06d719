package db

import "context"

// runIndexKey holds a run_index a caller knows (WithRunIndex).
type runIndexKey struct{}

type knownRunIndex struct {
	runID string
	index int64
}

// WithRunIndex returns ctx whose writes of runID's row, when the row comes
// without a run_index, may take index: the durable queue's claim saw the
// stored row (enqueued with its run_index), the agent's rows of the run do
// not carry it. A driver that assigns a missing run_index under a session
// lock (Postgres) then needs neither. An existing row keeps its run_index
// either way (an upsert does not change it).
func WithRunIndex(ctx context.Context, runID string, index int64) context.Context {
	return context.WithValue(ctx, runIndexKey{}, knownRunIndex{runID, index})
}

// KnownRunIndex is the run_index WithRunIndex put in ctx for runID.
func KnownRunIndex(ctx context.Context, runID string) (int64, bool) {
	k, ok := ctx.Value(runIndexKey{}).(knownRunIndex)
	if !ok || k.runID != runID {
		return 0, false
	}
	return k.index, true
}
