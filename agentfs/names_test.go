package agentfs_test

import (
	"bytes"
	"testing"

	"github.com/agentryhq/agentry/agentfs"
	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/dbtest/testdbs"
)

// A path ending in a space is refused for writing on every driver: on
// MySQL, whose collations pad with spaces, writing "a " overwrote "a".
func TestFS_WritingAPathEndingInASpaceIsRefused(t *testing.T) {
	t.Parallel()
	testdbs.Each(t, func(t *testing.T, d *db.DB) {
		fs := newFS(t, d, agentfs.Config{})
		must[agentfs.Info](t)(fs.Write(ctx, alice, "a", []byte("a"), agentfs.WriteOptions{}))
		_, err := fs.Write(ctx, alice, "a ", []byte("a with a space"), agentfs.WriteOptions{})
		wantErr(t, err, agentfs.ErrInvalidPath)
		if b, in, err := fs.Read(ctx, alice, "a"); err != nil || !bytes.Equal(b, []byte("a")) || in.Version != 1 {
			t.Fatalf("read a = %q %+v %v", b, in, err)
		}
	})
}

// A List prefix that is not UTF-8 text is ErrInvalidPath on every driver,
// as such a path is (Postgres answered with its raw "invalid byte
// sequence" error).
func TestFS_ListPrefixMustBeText(t *testing.T) {
	t.Parallel()
	testdbs.Each(t, func(t *testing.T, d *db.DB) {
		fs := newFS(t, d, agentfs.Config{})
		for _, p := range []string{"\xff", "a\x00"} {
			_, err := fs.List(ctx, alice, p)
			wantErr(t, err, agentfs.ErrInvalidPath)
		}
	})
}
