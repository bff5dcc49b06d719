// Package scripted is a deterministic model.Model for tests, demos and benchmarks:
// it answers from a script of turns (replies, reasoning, tool calls, errors) and
// never calls a network. It is not a language model; do not use it in production.
package scripted
