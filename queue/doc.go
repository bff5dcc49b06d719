// Package queue owns durable background runs: the job row (Agno's agno_jobs
// shape) committed with the run's PENDING row, dispatch with bounded
// concurrency on River, leases with heartbeats, fencing by attempt, recovery
// after a crash, cancellation through the database, per-user idempotency keys
// and the read side behind /queue. It also gives runs executed by a request
// a lease on the same rows: a streamed or synchronous run (Hold) and the
// continue of a paused run (HoldContinue), so that a crash does not leave
// them RUNNING and a cancel through any replica reaches them. See
// docs/adr/durable-queue.md and docs/adr/continue-lease.md.
package queue
