// Package peers compares Agentry's conversation hot path with other Go agent
// frameworks (Eino's ADK ChatModelAgent and react agent, LangChainGo's
// function-calling agent) on the same rows, with the same instant mock model
// and the same tool. It is its own module so the main module never depends on
// the peers; run.sh runs the frameworks interleaved and prints medians.
//
// Rows: construction with one tool, a single turn, a run with one tool call,
// and a 25-turn conversation held in memory with the whole history and with
// the last 3 runs. The sanity tests prove each framework did the same work.
package peers
