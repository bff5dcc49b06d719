// Package groupcommit owns the coordination of group commits: pending callers, the lead of
// a group and its hand-over, withdrawal before a group takes a caller, group size and retries.
// What a group does (SQLite savepoints, Postgres pipelines, enqueues) is the user's Commit.
package groupcommit
