// Package peers compares Agentry's conversation hot path with other Go agent
// frameworks (Eino's ADK ChatModelAgent and react agent, LangChainGo's
// function-calling agent) on the same rows, with the same instant mock model
// and the same tool. It is its own module so the main module never depends on
// the peers; run.sh runs the frameworks interleaved and prints medians.
//
// Rows: construction with one tool, a single turn, a run with one tool call,
// and a 25-turn conversation held in memory with the whole history and with
// the last 3 runs. The sanity tests prove each framework did the same work.
//
// A conversation row's op is one conversation from its first turn to its end.
// The peers hold its history in a value dropped with the op; Agentry holds it
// in its in-memory store, so the op ends by deleting the session and its runs
// (timed: it is Agentry's work). Without the delete the store keeps every
// conversation of the benchmark (b.N × 25 runs, ~300 MB at 10,000 ops) and an
// op's cost grows with b.N: fresh heap pages faulted in on every turn and a
// collector marking the whole store (docs/benchmarks.md, "Issue 12: in-memory
// conversation, third round (i12-mem5)").
package peers
