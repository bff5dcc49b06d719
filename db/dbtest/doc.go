// Package dbtest is the one conformance suite every db.Driver passes:
// dbtest.Run(t, open) exercises sessions, runs, first runs, memories, pagination, run_index
// concurrency, history rules and per-user scope against a fresh database per test.
package dbtest
