// Package memory owns what an agent remembers about a user across sessions:
// the memory manager that asks a model for add/update/delete changes and
// applies them to agno_memories in one transaction, the agentic memory tool,
// the memories and session summaries put in the system message, session
// summaries, memory optimization, and the tools that list and read a user's
// past sessions. Every operation is scoped to one user id; without one
// nothing is stored or read.
package memory
