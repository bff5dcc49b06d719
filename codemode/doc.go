// Package codemode owns CodeMode: a sandboxed JavaScript interpreter (goja),
// one per session, in which the model writes code that calls the agent's
// tools as async functions, with CPU, memory, depth and output limits, idle
// eviction and optional snapshots of its variables in the project's database.
package codemode
