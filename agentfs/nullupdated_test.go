package agentfs_test

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentryhq/agentry/agentfs"
	"github.com/agentryhq/agentry/db/sqlite"
)

// agno_fs.updated_at may be NULL (Agno's column is nullable; another
// writer sharing the database may leave it so). The sweep and a write's
// clean-up take such a file's age from created_at, but Read, Stat and
// List took the NULL as 0 and called it expired under any TTL: a file
// they said was missing still made a create-only write fail with
// ErrVersionConflict and still counted against the quota.
func TestFS_NullUpdatedAtAgesFromCreatedAt(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "agentry.db")
	d, err := sqlite.Open(context.Background(), sqlite.Config{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	fs := newFS(t, d, agentfs.Config{TTL: time.Hour})
	if _, err := fs.Write(ctx, alice, "notes.txt", []byte("kept"), agentfs.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	raw, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	if _, err := raw.Exec("UPDATE agno_fs SET updated_at = NULL"); err != nil {
		t.Fatal(err)
	}
	if got, _, err := fs.Read(ctx, alice, "notes.txt"); err != nil || string(got) != "kept" {
		t.Errorf("Read = %q, %v; want the file written a moment ago", got, err)
	}
	if _, err := fs.Stat(ctx, alice, "notes.txt"); err != nil {
		t.Errorf("Stat: %v", err)
	}
	if list, err := fs.List(ctx, alice, ""); err != nil || len(list) != 1 {
		t.Errorf("List = %+v, %v", list, err)
	}
	zero := int64(0)
	if _, err := fs.Write(ctx, alice, "notes.txt", []byte("again"), agentfs.WriteOptions{IfVersion: &zero}); !errors.Is(err, agentfs.ErrVersionConflict) {
		t.Errorf("create-only write over it: err = %v, want ErrVersionConflict (it exists)", err)
	}
	// and it expires an hour after its creation
	late := newFS(t, d, agentfs.Config{TTL: time.Hour, Now: func() time.Time { return time.Now().Add(2 * time.Hour) }})
	if _, _, err := late.Read(ctx, alice, "notes.txt"); !errors.Is(err, agentfs.ErrNotFound) {
		t.Errorf("two hours later: Read err = %v, want ErrNotFound", err)
	}
}
