// Package metrics owns the Prometheus exposition for operators (served at
// /prometheus, beside AgentOS's JSON /metrics): runs by status and component,
// run and model-call latency histograms, tokens, HTTP requests by route and
// status, and the queue's depth and wait through a hook the queue sets. It
// uses its own registry, never the global one.
package metrics
