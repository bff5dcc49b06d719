// Package queue owns durable background runs: the job row (Agno's agno_jobs
// shape) committed with the run's PENDING row, dispatch with bounded
// concurrency on River, leases with heartbeats, fencing by attempt, recovery
// after a crash, cancellation through the database, per-user idempotency keys
// and the read side behind /queue. See docs/adr/durable-queue.md.
package queue
