package dbtest

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/db"
)

var fileTests = map[string]func(t *testing.T, d *db.DB){
	"PutFile_InsertsAtVersionOneAndGetReturnsIt": func(t *testing.T, d *db.DB) {
		content := []byte("{\"x\":1}\x00\xff binary-safe")
		got, err := d.PutFile(bg, &db.File{Namespace: "codemode/a", Path: "sessions/s1", Content: content})
		noErr(t, err)
		equal(t, "version", got.Version, int64(1))
		equal(t, "size_bytes", got.SizeBytes, int64(len(content)))
		if got.CreatedAt == 0 || got.UpdatedAt == 0 {
			t.Fatalf("timestamps not set: %+v", got)
		}
		read, err := d.GetFile(bg, "codemode/a", "sessions/s1")
		noErr(t, err)
		if !bytes.Equal(read.Content, content) {
			t.Fatalf("content = %q, want %q", read.Content, content)
		}
	},
	"PutFile_ReplacesContentAndBumpsVersion": func(t *testing.T, d *db.DB) {
		first, err := d.PutFile(bg, &db.File{Namespace: "ns", Path: "p", Content: []byte("one")})
		noErr(t, err)
		second, err := d.PutFile(bg, &db.File{Namespace: "ns", Path: "p", Content: []byte("second")})
		noErr(t, err)
		equal(t, "version", second.Version, int64(2))
		equal(t, "content", string(second.Content), "second")
		equal(t, "size_bytes", second.SizeBytes, int64(6))
		equal(t, "created_at kept", second.CreatedAt, first.CreatedAt)
	},
	// MySQL compares keys with PAD SPACE: "a " and "a" would be one row,
	// the second write overwriting the first file. Refused on every
	// backend, as record ids and user ids are.
	"PutFile_KeyEndingInASpaceIsRefused": func(t *testing.T, d *db.DB) {
		_, err := d.PutFile(bg, &db.File{Namespace: "ns", Path: "a", Content: []byte("first")})
		noErr(t, err)
		for _, k := range [][2]string{{"ns", "a "}, {"ns ", "a"}} {
			_, err = d.PutFile(bg, &db.File{Namespace: k[0], Path: k[1], Content: []byte("second")})
			wantErr(t, err, db.ErrInvalidRecord)
			_, err = d.PutFileIfVersion(bg, &db.File{Namespace: k[0], Path: k[1], Content: []byte("second")}, 1)
			wantErr(t, err, db.ErrInvalidRecord)
		}
		got, err := d.GetFile(bg, "ns", "a")
		noErr(t, err)
		equal(t, "content", string(got.Content), "first")
		equal(t, "version", got.Version, int64(1))
	},
	"PutFile_EmptyContentIsAFile": func(t *testing.T, d *db.DB) {
		_, err := d.PutFile(bg, &db.File{Namespace: "ns", Path: "empty"})
		noErr(t, err)
		got, err := d.GetFile(bg, "ns", "empty")
		noErr(t, err)
		equal(t, "size", got.SizeBytes, int64(0))
		equal(t, "content", len(got.Content), 0)
	},
	"Files_AreKeyedByNamespaceAndPath": func(t *testing.T, d *db.DB) {
		for _, ns := range []string{"a", "b"} {
			_, err := d.PutFile(bg, &db.File{Namespace: ns, Path: "same", Content: []byte(ns)})
			noErr(t, err)
		}
		for _, ns := range []string{"a", "b"} {
			got, err := d.GetFile(bg, ns, "same")
			noErr(t, err)
			equal(t, "content of "+ns, string(got.Content), ns)
		}
		_, err := d.GetFile(bg, "a", "SAME")
		wantErr(t, err, db.ErrNotFound)
	},
	"DeleteFile_RemovesAndMissingIsNotAnError": func(t *testing.T, d *db.DB) {
		_, err := d.PutFile(bg, &db.File{Namespace: "ns", Path: "p", Content: []byte("x")})
		noErr(t, err)
		noErr(t, d.DeleteFile(bg, "ns", "p"))
		_, err = d.GetFile(bg, "ns", "p")
		wantErr(t, err, db.ErrNotFound)
		noErr(t, d.DeleteFile(bg, "ns", "p"))
		again, err := d.PutFile(bg, &db.File{Namespace: "ns", Path: "p", Content: []byte("y")})
		noErr(t, err)
		equal(t, "version after delete", again.Version, int64(1))
	},
	"Files_UserScopeDoesNotHideThem": func(t *testing.T, d *db.DB) {
		// agno_fs has no owner column: files are not user-scoped.
		_, err := d.PutFile(db.WithUserScope(bg, "alice"), &db.File{Namespace: "ns", Path: "p", Content: []byte("x")})
		noErr(t, err)
		_, err = d.GetFile(db.WithUserScope(bg, "bob"), "ns", "p")
		noErr(t, err)
	},
	"Files_UnicodeKeysAndOneMegabyteContentRoundTrip": func(t *testing.T, d *db.DB) {
		big := []byte(strings.Repeat("snapshot ✓ ", 100_000))
		path := "sessions/" + unicodeSamples[0]
		_, err := d.PutFile(bg, &db.File{Namespace: "codemode/ünï", Path: path, Content: big})
		noErr(t, err)
		got, err := d.GetFile(bg, "codemode/ünï", path)
		noErr(t, err)
		if !bytes.Equal(got.Content, big) {
			t.Fatalf("content of %d bytes came back as %d bytes", len(big), len(got.Content))
		}
	},
	"Files_InvalidKeysAreRefused": func(t *testing.T, d *db.DB) {
		for _, f := range []db.File{{Path: "p"}, {Namespace: "n"}, {Namespace: strings.Repeat("n", db.MaxFileNamespace+1), Path: "p"},
			{Namespace: "n", Path: strings.Repeat("p", db.MaxFilePath+1)}, {Namespace: "n", Path: "\xff"}} {
			_, err := d.PutFile(bg, &f)
			wantErr(t, err, db.ErrInvalidRecord)
		}
		_, err := d.GetFile(bg, "", "p")
		wantErr(t, err, db.ErrInvalidRecord)
	},
}

var fileTests2 = map[string]func(t *testing.T, d *db.DB){
	"PutFileIfVersion_CreatesOnlyWhenAbsentAndUpdatesOnlyAtTheVersion": func(t *testing.T, d *db.DB) {
		f1, err := d.PutFileIfVersion(bg, &db.File{Namespace: "ns", Path: "p", Content: []byte("one")}, 0)
		noErr(t, err)
		equal(t, "version", f1.Version, int64(1))
		_, err = d.PutFileIfVersion(bg, &db.File{Namespace: "ns", Path: "p", Content: []byte("again")}, 0)
		wantErr(t, err, db.ErrVersionConflict)
		_, err = d.PutFileIfVersion(bg, &db.File{Namespace: "ns", Path: "p", Content: []byte("stale")}, 2)
		wantErr(t, err, db.ErrVersionConflict)
		f2, err := d.PutFileIfVersion(bg, &db.File{Namespace: "ns", Path: "p", Content: []byte("two")}, 1)
		noErr(t, err)
		equal(t, "version", f2.Version, int64(2))
		equal(t, "content", string(f2.Content), "two")
		_, err = d.PutFileIfVersion(bg, &db.File{Namespace: "ns", Path: "missing", Content: []byte("x")}, 1)
		wantErr(t, err, db.ErrVersionConflict)
	},
	"PutFileIfVersion_ConcurrentWritersAtOneVersionOneWins": func(t *testing.T, d *db.DB) {
		_, err := d.PutFile(bg, &db.File{Namespace: "ns", Path: "p", Content: []byte("base")})
		noErr(t, err)
		errs := make(chan error, 8)
		for i := range 8 {
			go func() {
				_, err := d.PutFileIfVersion(bg, &db.File{Namespace: "ns", Path: "p", Content: []byte{byte('a' + i)}}, 1)
				errs <- err
			}()
		}
		wins := 0
		for range 8 {
			if err := <-errs; err == nil {
				wins++
			} else if !errors.Is(err, db.ErrVersionConflict) {
				t.Fatalf("unexpected error: %v", err)
			}
		}
		equal(t, "winners", wins, 1)
	},
	"ListFiles_ByPrefixCaseSensitiveWithoutContent": func(t *testing.T, d *db.DB) {
		for _, p := range []string{"a/1", "a/2", "A/3", "b/1", "a_x"} {
			_, err := d.PutFile(bg, &db.File{Namespace: "ns", Path: p, Content: []byte(p)})
			noErr(t, err)
		}
		_, err := d.PutFile(bg, &db.File{Namespace: "other", Path: "a/9", Content: []byte("x")})
		noErr(t, err)
		got, err := d.ListFiles(bg, "ns", "a/")
		noErr(t, err)
		var paths []string
		for _, f := range got {
			paths = append(paths, f.Path)
			if len(f.Content) != 0 || f.SizeBytes != 3 {
				t.Fatalf("listed file %s: content %q size %d", f.Path, f.Content, f.SizeBytes)
			}
		}
		equal(t, "paths", strings.Join(paths, ","), "a/1,a/2")
		all, err := d.ListFiles(bg, "ns", "")
		noErr(t, err)
		equal(t, "all", len(all), 5)
	},
	"FileUsage_SumsOneNamespace": func(t *testing.T, d *db.DB) {
		u, err := d.FileUsage(bg, "ns")
		noErr(t, err)
		equal(t, "empty", u, db.FileUsage{})
		for _, c := range []string{"12345", "123"} {
			_, err := d.PutFile(bg, &db.File{Namespace: "ns", Path: c, Content: []byte(c)})
			noErr(t, err)
		}
		_, err = d.PutFile(bg, &db.File{Namespace: "ns2", Path: "x", Content: []byte("1234567")})
		noErr(t, err)
		u, err = d.FileUsage(bg, "ns")
		noErr(t, err)
		equal(t, "usage", u, db.FileUsage{Bytes: 8, Files: 2})
	},
	"DeleteFilesBefore_DeletesOnlyOldFilesUnderThePrefix": func(t *testing.T, d *db.DB) {
		for _, ns := range []string{"tmp/a", "tmp/b", "TMP/c", "keep"} {
			_, err := d.PutFile(bg, &db.File{Namespace: ns, Path: "p", Content: []byte("x")})
			noErr(t, err)
		}
		a, err := d.GetFile(bg, "tmp/a", "p")
		noErr(t, err)
		b, err := d.GetFile(bg, "tmp/b", "p")
		noErr(t, err)
		n, err := d.DeleteFilesBefore(bg, "tmp/", a.UpdatedAt)
		noErr(t, err)
		equal(t, "deleted (none older)", n, int64(0))
		n, err = d.DeleteFilesBefore(bg, "tmp/", max(a.UpdatedAt, b.UpdatedAt)+1)
		noErr(t, err)
		equal(t, "deleted", n, int64(2))
		for ns, want := range map[string]error{"tmp/a": db.ErrNotFound, "tmp/b": db.ErrNotFound, "TMP/c": nil, "keep": nil} {
			_, err := d.GetFile(bg, ns, "p")
			if want == nil {
				noErr(t, err)
			} else {
				wantErr(t, err, want)
			}
		}
		_, err = d.DeleteFilesBefore(bg, "", b.UpdatedAt+1)
		wantErr(t, err, db.ErrInvalidRecord)
	},
}
