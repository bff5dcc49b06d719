package sqlstore_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/dbtest/testdbs"
)

// DeleteFilesBefore deletes the files of exactly the namespaces starting
// with the prefix, byte for byte, on every driver: the range the SQL
// drivers search first must hold them all (a control character after the
// prefix sorts below it under MySQL's space padding) and nothing else may
// pass.
func TestDeleteFilesBefore_DeletesExactlyThePrefixedNamespaces(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	testdbs.Each(t, func(t *testing.T, d *db.DB) {
		under := []string{"tmp/a", "tmp/", "tmp/\tx", "tmp/\x01", "tmp/é", "tmp/\U0010FFFF", "tmp/\uD7FFz"}
		others := []string{"tmp", "tmp-x", "tmp.x", "tmp0", "tmq", "TMP/a", "Tmp/b", "tmp\t/", "atmp/", "tmp\U0010FFFF"}
		for _, ns := range append(slices.Clone(under), others...) {
			if _, err := d.PutFile(ctx, &db.File{Namespace: ns, Path: "f", Content: []byte(ns)}); err != nil {
				t.Fatalf("put %q: %v", ns, err)
			}
		}
		n, err := d.DeleteFilesBefore(ctx, "tmp/", time.Now().Unix()+60)
		if err != nil {
			t.Fatal(err)
		}
		if n != int64(len(under)) {
			t.Errorf("deleted %d files, want %d", n, len(under))
		}
		for _, ns := range under {
			if _, err := d.GetFile(ctx, ns, "f"); err == nil {
				t.Errorf("%q is under the prefix and was kept", ns)
			}
		}
		for _, ns := range others {
			if _, err := d.GetFile(ctx, ns, "f"); err != nil {
				t.Errorf("%q is not under the prefix: %v", ns, err)
			}
		}
		// a prefix ending in a multi-byte character, and one that is a
		// whole namespace (a write's clean-up of its own)
		for _, c := range []struct {
			prefix string
			want   int64
		}{{"tmp\U0010FFFF", 1}, {"tmp-x", 1}, {"Tmp/b", 1}, {"tmp", 4}} {
			n, err := d.DeleteFilesBefore(ctx, c.prefix, time.Now().Unix()+60)
			if err != nil || n != c.want {
				t.Errorf("prefix %q deleted %d (%v), want %d", c.prefix, n, err, c.want)
			}
		}
	})
}
