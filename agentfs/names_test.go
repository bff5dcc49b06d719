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

// No call takes a path ending in a space, and a List prefix ending in one
// lists only paths that start with it: on MySQL, whose collations pad
// with spaces, Delete("a ") deleted "a" and List("a ") listed it, and
// Read("a ") failed with the database's db.ErrInvalidRecord where the
// doc promised it was taken.
func TestFS_PathEndingInASpaceReachesNoOtherFile(t *testing.T) {
	t.Parallel()
	testdbs.Each(t, func(t *testing.T, d *db.DB) {
		fs := newFS(t, d, agentfs.Config{})
		must[agentfs.Info](t)(fs.Write(ctx, alice, "a", []byte("a"), agentfs.WriteOptions{}))
		must[agentfs.Info](t)(fs.Write(ctx, alice, "dir/b", []byte("b"), agentfs.WriteOptions{}))
		wantErr(t, fs.Delete(ctx, alice, "a "), agentfs.ErrInvalidPath)
		_, _, err := fs.Read(ctx, alice, "a ")
		wantErr(t, err, agentfs.ErrInvalidPath)
		_, err = fs.Stat(ctx, alice, "a ")
		wantErr(t, err, agentfs.ErrInvalidPath)
		if b, in, err := fs.Read(ctx, alice, "a"); err != nil || !bytes.Equal(b, []byte("a")) || in.Version != 1 {
			t.Fatalf("read a = %q %+v %v", b, in, err)
		}
		for _, p := range []string{"a ", "dir/b ", "dir/b  "} {
			if l := must[[]agentfs.Info](t)(fs.List(ctx, alice, p)); len(l) != 0 {
				t.Errorf("List(%q) = %+v", p, l)
			}
		}
	})
}
