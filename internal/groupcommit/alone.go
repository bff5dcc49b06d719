package groupcommit

import "context"

type aloneKey struct{}

// Alone marks ctx's writes as ones a client waits for live (a streamed
// run's), or ones that are a group already (the durable queue's enqueue
// groups on Postgres): a store that groups writes commits them in a
// transaction of their own, in arrival order, rather than in a group that
// wakes all its members at once (docs/adr/group-commit-coordinator.md; on
// Postgres, beside the pipeline group in flight: db/postgres/pipegroup.go).
func Alone(ctx context.Context) context.Context {
	return context.WithValue(ctx, aloneKey{}, true)
}

// IsAlone reports whether ctx was marked by Alone.
func IsAlone(ctx context.Context) bool {
	v, _ := ctx.Value(aloneKey{}).(bool)
	return v
}
