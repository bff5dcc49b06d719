// Package agentfs owns AgentFS: a namespaced file store on the project's
// database (table agno_fs, every driver) with per-file and per-namespace
// quotas, optimistic versions, a TTL sweep, and one namespace per
// (user, session) so that a caller can only ever address its own files.
package agentfs
