// Package builtin owns the tools that configuration files can name without Go
// code (`tools: [current_time, calculator]`): small, offline-safe tools, looked up
// by name.
package builtin
