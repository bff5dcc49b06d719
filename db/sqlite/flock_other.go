//go:build !unix

package sqlite

// flockFile is a no-op where flock is unavailable: concurrent migrations of
// one SQLite file are then serialised only by SQLite's own write lock.
func flockFile(string) (func(), bool, error) { return func() {}, true, nil }

// hasUnixVFS: SQLite here has no unix VFS (Config.Exclusive).
const hasUnixVFS = false
