// Package groupcommit owns the coordination of a group commit: callers'
// operations wait as pending members, the first caller leads a group of
// whatever is pending, members can withdraw until a group takes them, and
// the lead passes to the next pending caller; what a group does is the
// user's commit function (SQLite run writes, Postgres enqueues and pipelines).
package groupcommit
