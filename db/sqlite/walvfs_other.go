//go:build !unix

package sqlite

import (
	"context"
	"database/sql"
)

// Without SQLite's unix VFS the writer uses the platform's default VFS: its
// WAL writes are not coalesced (walvfs_unix.go).

func registerWriterVFS() error { return nil }

func writerVFS(exclusive bool) string {
	if exclusive {
		return exclusiveVFS
	}
	return ""
}

// changeCounter: without the writer's VFS there is none (no history cache).
func changeCounter(context.Context, *sql.DB) (func() (uint64, bool), error) { return nil, nil }
