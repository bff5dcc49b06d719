package agentfs_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/agentryhq/agentry/agentfs"
	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/dbtest/testdbs"
)

// An expired file reads as missing, so it is missing for a write too: a
// create-only write (IfVersion 0, offload's claim) stores the file instead
// of failing with ErrVersionConflict on a file Read and Stat call absent,
// the new file starts at version 1, and the quota counts no expired bytes.
func TestFS_ExpiredFileIsMissingForWritesAndQuota(t *testing.T) {
	t.Parallel()
	testdbs.Each(t, func(t *testing.T, d *db.DB) {
		fs := newFS(t, d, agentfs.Config{TTL: time.Hour, MaxNamespaceBytes: 10})
		ns, err := fs.NamespaceOf(alice)
		if err != nil {
			t.Fatal(err)
		}
		// files last written two hours ago (the driver keeps the times it
		// is given; the db front stamps its own clock's)
		old := time.Now().Add(-2 * time.Hour).Unix()
		for _, p := range []string{"a", "b"} {
			if _, err := d.Driver().PutFile(ctx, &db.File{Namespace: ns, Path: p, Content: []byte("old old"), SizeBytes: 7, CreatedAt: old, UpdatedAt: old}); err != nil {
				t.Fatal(err)
			}
		}
		_, err = fs.Stat(ctx, alice, "a")
		wantErr(t, err, agentfs.ErrNotFound)
		zero := int64(0)
		in, err := fs.Write(ctx, alice, "a", []byte("new"), agentfs.WriteOptions{IfVersion: &zero})
		if err != nil || in.Version != 1 {
			t.Fatalf("create-only write over an expired file: %+v %v", in, err)
		}
		if got, _, err := fs.Read(ctx, alice, "a"); err != nil || !bytes.Equal(got, []byte("new")) {
			t.Fatalf("read = %q %v", got, err)
		}
		// 3 + 7 bytes fit in 10 once the expired ones no longer count
		must[agentfs.Info](t)(fs.Write(ctx, alice, "c", []byte("1234567"), agentfs.WriteOptions{}))
		if u := must[db.FileUsage](t)(fs.Usage(ctx, alice)); u != (db.FileUsage{Bytes: 10, Files: 2}) {
			t.Fatalf("usage = %+v, want the two live files", u)
		}
	})
}
