// Package loadgen owns Agentry's HTTP load generator: it drives POST
// /agents/{id}/runs on an AgentOS-compatible server (JSON or SSE), bounded by a
// request count or a duration, and reports runs/s and exact latency percentiles.
//
// It only targets loopback addresses unless Config.AllowRemote is set: load is
// for benchmarking a server on the same machine, never for someone else's host.
package loadgen
