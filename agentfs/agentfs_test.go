package agentfs_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentryhq/agentry/agentfs"
	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/dbtest/testdbs"
)

var ctx = context.Background()

func newFS(t *testing.T, d *db.DB, cfg agentfs.Config) *agentfs.FS {
	t.Helper()
	cfg.DB = d
	fs, err := agentfs.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return fs
}

func must[T any](t *testing.T) func(T, error) T {
	return func(v T, err error) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

func wantErr(t *testing.T, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("error = %v, want %v", err, target)
	}
}

var alice = agentfs.Scope{SessionID: "s1", UserID: "alice"}

func TestFS_WriteReadVersionsOnEveryDriver(t *testing.T) {
	t.Parallel()
	testdbs.Each(t, func(t *testing.T, d *db.DB) {
		fs := newFS(t, d, agentfs.Config{})
		content := []byte("line 1\nbinary \x00\xff ok\n")
		in := must[agentfs.Info](t)(fs.Write(ctx, alice, "notes/a.txt", content, agentfs.WriteOptions{}))
		if in.Version != 1 || in.Size != int64(len(content)) {
			t.Fatalf("info = %+v", in)
		}
		got, info, err := fs.Read(ctx, alice, "notes/a.txt")
		if err != nil || !bytes.Equal(got, content) || info.Version != 1 {
			t.Fatalf("read = %q %+v %v", got, info, err)
		}
		v1 := int64(1)
		in = must[agentfs.Info](t)(fs.Write(ctx, alice, "notes/a.txt", []byte("two"), agentfs.WriteOptions{IfVersion: &v1}))
		if in.Version != 2 {
			t.Fatalf("version after rewrite = %d", in.Version)
		}
		_, err = fs.Write(ctx, alice, "notes/a.txt", []byte("stale"), agentfs.WriteOptions{IfVersion: &v1})
		wantErr(t, err, agentfs.ErrVersionConflict)
		zero := int64(0)
		_, err = fs.Write(ctx, alice, "notes/a.txt", []byte("create-only"), agentfs.WriteOptions{IfVersion: &zero})
		wantErr(t, err, agentfs.ErrVersionConflict)
		must[agentfs.Info](t)(fs.Write(ctx, alice, "notes/b.txt", []byte("b"), agentfs.WriteOptions{IfVersion: &zero}))
		list := must[[]agentfs.Info](t)(fs.List(ctx, alice, "notes/"))
		if len(list) != 2 || list[0].Path != "notes/a.txt" || list[1].Path != "notes/b.txt" {
			t.Fatalf("list = %+v", list)
		}
		st := must[agentfs.Info](t)(fs.Stat(ctx, alice, "notes/a.txt"))
		if st.Size != 3 || st.Version != 2 {
			t.Fatalf("stat = %+v", st)
		}
		if err := fs.Delete(ctx, alice, "notes/a.txt"); err != nil {
			t.Fatal(err)
		}
		_, _, err = fs.Read(ctx, alice, "notes/a.txt")
		wantErr(t, err, agentfs.ErrNotFound)
		wantErr(t, err, db.ErrNotFound)
	})
}

func TestFS_OtherSessionOrUserSeesNothing(t *testing.T) {
	t.Parallel()
	testdbs.Each(t, func(t *testing.T, d *db.DB) {
		fs := newFS(t, d, agentfs.Config{})
		must[agentfs.Info](t)(fs.Write(ctx, alice, "secret", []byte("x"), agentfs.WriteOptions{}))
		for _, other := range []agentfs.Scope{{SessionID: "s1", UserID: "bob"}, {SessionID: "s2", UserID: "alice"}, {SessionID: "s1"}} {
			_, _, err := fs.Read(ctx, other, "secret")
			wantErr(t, err, agentfs.ErrNotFound)
			_, err = fs.Stat(ctx, other, "secret")
			wantErr(t, err, agentfs.ErrNotFound)
			if l := must[[]agentfs.Info](t)(fs.List(ctx, other, "")); len(l) != 0 {
				t.Fatalf("%+v lists %+v", other, l)
			}
			if err := fs.Delete(ctx, other, "secret"); err != nil {
				t.Fatal(err)
			}
		}
		if _, _, err := fs.Read(ctx, alice, "secret"); err != nil {
			t.Fatalf("owner lost the file: %v", err)
		}
		_, _, err := fs.Read(ctx, agentfs.Scope{UserID: "alice"}, "secret")
		wantErr(t, err, agentfs.ErrNoSession)
	})
}

func TestFS_PerFileAndPerNamespaceQuotas(t *testing.T) {
	t.Parallel()
	testdbs.Each(t, func(t *testing.T, d *db.DB) {
		fs := newFS(t, d, agentfs.Config{MaxFileBytes: 100, MaxNamespaceBytes: 250})
		_, err := fs.Write(ctx, alice, "big", make([]byte, 101), agentfs.WriteOptions{})
		wantErr(t, err, agentfs.ErrFileTooLarge)
		must[agentfs.Info](t)(fs.Write(ctx, alice, "a", make([]byte, 100), agentfs.WriteOptions{}))
		must[agentfs.Info](t)(fs.Write(ctx, alice, "b", make([]byte, 100), agentfs.WriteOptions{}))
		_, err = fs.Write(ctx, alice, "c", make([]byte, 51), agentfs.WriteOptions{})
		wantErr(t, err, agentfs.ErrQuotaExceeded)
		// replacing a file counts its new size, not both
		must[agentfs.Info](t)(fs.Write(ctx, alice, "a", make([]byte, 100), agentfs.WriteOptions{}))
		must[agentfs.Info](t)(fs.Write(ctx, alice, "c", make([]byte, 50), agentfs.WriteOptions{}))
		// another session has its own quota
		must[agentfs.Info](t)(fs.Write(ctx, agentfs.Scope{SessionID: "s2", UserID: "alice"}, "a", make([]byte, 100), agentfs.WriteOptions{}))
		u := must[db.FileUsage](t)(fs.Usage(ctx, alice))
		if u.Bytes != 250 || u.Files != 3 {
			t.Fatalf("usage = %+v", u)
		}
		// nothing was stored half-way
		if _, _, err := fs.Read(ctx, alice, "big"); !errors.Is(err, agentfs.ErrNotFound) {
			t.Fatalf("refused file exists: %v", err)
		}
	})
}

func TestFS_ConcurrentWritersStayWithinTheQuota(t *testing.T) {
	t.Parallel()
	testdbs.Each(t, func(t *testing.T, d *db.DB) {
		fs := newFS(t, d, agentfs.Config{MaxFileBytes: 100, MaxNamespaceBytes: 500})
		var wg sync.WaitGroup
		for i := range 12 {
			wg.Go(func() {
				_, err := fs.Write(ctx, alice, "f"+strings.Repeat("x", i), make([]byte, 100), agentfs.WriteOptions{})
				if err != nil && !errors.Is(err, agentfs.ErrQuotaExceeded) {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		u := must[db.FileUsage](t)(fs.Usage(ctx, alice))
		if u.Bytes != 500 || u.Files != 5 {
			t.Fatalf("usage = %+v, want exactly the quota", u)
		}
	})
}

func TestFS_TTLSweepDeletesOnlyOldFilesOfThisFS(t *testing.T) {
	t.Parallel()
	testdbs.Each(t, func(t *testing.T, d *db.DB) {
		var mu sync.Mutex
		now := time.Now()
		clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
		fs := newFS(t, d, agentfs.Config{TTL: time.Hour, Now: clock})
		other := newFS(t, d, agentfs.Config{Namespace: "agentfs2", TTL: time.Hour})
		must[agentfs.Info](t)(fs.Write(ctx, alice, "old", []byte("x"), agentfs.WriteOptions{}))
		must[agentfs.Info](t)(other.Write(ctx, alice, "old", []byte("x"), agentfs.WriteOptions{}))
		if n := must[int64](t)(fs.Sweep(ctx)); n != 0 {
			t.Fatalf("swept %d fresh files", n)
		}
		mu.Lock()
		now = now.Add(2 * time.Hour)
		mu.Unlock()
		// expired files read as missing even before the sweep
		_, _, err := fs.Read(ctx, alice, "old")
		wantErr(t, err, agentfs.ErrNotFound)
		if n := must[int64](t)(fs.Sweep(ctx)); n != 1 {
			t.Fatalf("swept %d, want 1", n)
		}
		if u := must[db.FileUsage](t)(fs.Usage(ctx, alice)); u.Files != 0 {
			t.Fatalf("usage after sweep = %+v", u)
		}
		if _, _, err := other.Read(ctx, alice, "old"); err != nil {
			t.Fatalf("sweep reached another FS's namespace: %v", err)
		}
	})
}

func TestFS_BadPathsAndConfig(t *testing.T) {
	t.Parallel()
	fs := newFS(t, testdbs.SQLite(t), agentfs.Config{})
	for _, p := range []string{"", "/abs", "../up", "a/../../b", "a//b", "a/", ".", "..", "nul\x00", "\xff", strings.Repeat("p", db.MaxFilePath+1)} {
		if _, err := fs.Write(ctx, alice, p, []byte("x"), agentfs.WriteOptions{}); !errors.Is(err, agentfs.ErrInvalidPath) {
			t.Errorf("Write(%q) = %v, want ErrInvalidPath", p, err)
		}
	}
	// a NUL in the namespace: Postgres refuses it in text, so every
	// write there failed with the database's error
	for _, cfg := range []agentfs.Config{{}, {DB: testdbs.SQLite(t), Namespace: "a/b"}, {DB: testdbs.SQLite(t), MaxFileBytes: -1},
		{DB: testdbs.SQLite(t), Namespace: "a\x00b"}} {
		if _, err := agentfs.New(cfg); err == nil {
			t.Errorf("New(%+v) accepted", cfg)
		}
	}
}

func FuzzCheckPath(f *testing.F) {
	for _, s := range []string{"a", "a/b", "../x", "/x", "a//b", "\xff", "a/./b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		if agentfs.CheckPath(p) != nil {
			return
		}
		if strings.HasPrefix(p, "/") || strings.Contains("/"+p+"/", "/../") || strings.Contains(p, "//") || strings.ContainsRune(p, 0) || strings.HasSuffix(p, " ") {
			t.Fatalf("accepted unsafe path %q", p)
		}
	})
}

// Two handles with their own connection pools on one database stand for
// two processes: together they never pass the namespace quota.
func TestFS_TwoProcessesWritingOneNamespaceStayWithinTheQuota(t *testing.T) {
	t.Parallel()
	testdbs.EachTwins(t, func(t *testing.T, a, b *db.DB) {
		fss := []*agentfs.FS{newFS(t, a, agentfs.Config{MaxFileBytes: 100, MaxNamespaceBytes: 700}),
			newFS(t, b, agentfs.Config{MaxFileBytes: 100, MaxNamespaceBytes: 700})}
		var wg sync.WaitGroup
		for i := range 16 {
			wg.Go(func() {
				_, err := fss[i%2].Write(ctx, alice, "f"+strings.Repeat("x", i), make([]byte, 100), agentfs.WriteOptions{})
				if err != nil && !errors.Is(err, agentfs.ErrQuotaExceeded) {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		for _, fs := range fss {
			if u := must[db.FileUsage](t)(fs.Usage(ctx, alice)); u.Bytes != 700 || u.Files != 7 {
				t.Fatalf("usage = %+v, want exactly the quota (7 files)", u)
			}
		}
	})
}

// The defaults are the issue's: 8 MB per file, 200 MB per namespace.
func TestFS_DefaultQuotasAre8MBPerFileAnd200MBPerNamespace(t *testing.T) {
	t.Parallel()
	d := testdbs.Memory(t)
	fs := newFS(t, d, agentfs.Config{})
	if c := fs.Config(); c.MaxFileBytes != 8<<20 || c.MaxNamespaceBytes != 200<<20 {
		t.Fatalf("defaults = %d / %d", c.MaxFileBytes, c.MaxNamespaceBytes)
	}
	_, err := fs.Write(ctx, alice, "over", make([]byte, 8<<20+1), agentfs.WriteOptions{})
	wantErr(t, err, agentfs.ErrFileTooLarge)
	for i := range 25 {
		must[agentfs.Info](t)(fs.Write(ctx, alice, "f"+strings.Repeat("x", i), make([]byte, 8<<20), agentfs.WriteOptions{}))
	}
	_, err = fs.Write(ctx, alice, "one-more", []byte("x"), agentfs.WriteOptions{})
	wantErr(t, err, agentfs.ErrQuotaExceeded)
}

// Two scopes never share a namespace: the user and session ids were
// hashed joined by a NUL, so user "u\x00s" in session "x" read and wrote
// the files of user "u" in session "s\x00x". A user id holding a NUL is
// refused (the server's ids never hold one).
func TestFS_UserIDWithANULReachesNoOtherScope(t *testing.T) {
	t.Parallel()
	fs := newFS(t, testdbs.Memory(t), agentfs.Config{})
	owner := agentfs.Scope{UserID: "u", SessionID: "s\x00x"}
	must[agentfs.Info](t)(fs.Write(ctx, owner, "secret", []byte("u's"), agentfs.WriteOptions{}))
	forger := agentfs.Scope{UserID: "u\x00s", SessionID: "x"}
	_, _, err := fs.Read(ctx, forger, "secret")
	wantErr(t, err, agentfs.ErrInvalidScope)
	_, err = fs.Write(ctx, forger, "secret", []byte("forged"), agentfs.WriteOptions{})
	wantErr(t, err, agentfs.ErrInvalidScope)
	_, err = fs.NamespaceOf(forger)
	wantErr(t, err, agentfs.ErrInvalidScope)
	if b, _, err := fs.Read(ctx, owner, "secret"); err != nil || string(b) != "u's" {
		t.Fatalf("owner reads %q, %v", b, err)
	}
}
