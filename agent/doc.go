// Package agent owns the Agent: a config struct, the run loop behind Run and
// Stream (history, reasoning model, concurrent tool calls, structured output,
// human-in-the-loop pauses and ContinueRun) and the one-row persistence of runs.
package agent
