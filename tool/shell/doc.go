// Package shell owns the shell toolkit (Agno's ShellTools: run_shell_command):
// off unless commands are allow-listed; each call executes one allowed
// program directly (no shell, so no interpolation, pipes or globbing) with a
// timeout, a minimal environment and capped output, in a PID namespace of its
// own where allowed, so nothing it starts outlives the call.
package shell
