package dbtest

import (
	"bytes"
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
