// Package mediatest is the one suite every media.Storage passes.
package mediatest

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/agentryhq/agentry/media"
)

// Run checks upload, download, exists, URL, delete, deleting a session's
// objects, concurrent writes of one key, content-hashed dedupe and key
// validation against s. signs says whether URL must return a
// working signed URL.
func Run(t *testing.T, s media.Storage, signs bool) {
	ctx := context.Background()
	content := bytes.Repeat([]byte{0xff, 0xd8, 0x00, 'j'}, 30_000)
	owner := media.Owner{DB: "db", User: "alice", Session: "session-1"}
	ref, err := media.Put(ctx, s, owner, "image", "image/jpeg", "cat.jpg", content)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(ref.StorageKey, ref.ContentHash+".jpg") || ref.Size != int64(len(content)) || ref.StorageBackend != s.Backend() {
		t.Fatalf("reference = %+v", ref)
	}
	if ok, err := s.Exists(ctx, ref.StorageKey); !ok || err != nil {
		t.Fatalf("exists = %v %v", ok, err)
	}
	got, err := media.Get(ctx, s, ref)
	if err != nil || !bytes.Equal(got, content) {
		t.Fatalf("download: %d bytes, %v", len(got), err)
	}
	again, err := media.Put(ctx, s, owner, "image", "image/jpeg", "other-name.jpg", content)
	if err != nil || again.StorageKey != ref.StorageKey {
		t.Fatalf("the same bytes twice gave %s and %s (%v)", ref.StorageKey, again.StorageKey, err)
	}
	// The same session id in another database or of another user is
	// another owner: nothing is shared (user isolation).
	for _, other := range []media.Owner{
		{DB: "db", User: "alice", Session: "session-2"},
		{DB: "db", User: "bob", Session: "session-1"},
		{DB: "db2", User: "alice", Session: "session-1"},
	} {
		o, err := media.Put(ctx, s, other, "image", "image/jpeg", "cat.jpg", content)
		if err != nil || o.StorageKey == ref.StorageKey {
			t.Fatalf("%+v shares the key of %+v: %v", other, owner, err)
		}
	}
	u, err := s.URL(ctx, ref.StorageKey, 0)
	if err != nil {
		t.Fatal(err)
	}
	if signs {
		if u == "" || !strings.Contains(u, "X-Amz-Signature=") {
			t.Fatalf("URL = %q, want a presigned URL", u)
		}
		resp, err := http.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !bytes.Equal(body, content) {
			t.Fatalf("GET presigned: %d, %d bytes", resp.StatusCode, len(body))
		}
	} else if u != "" {
		t.Fatalf("URL = %q from a backend that cannot sign", u)
	}
	if err := s.Delete(ctx, ref.StorageKey); err != nil {
		t.Fatal(err)
	}
	if ok, _ := s.Exists(ctx, ref.StorageKey); ok {
		t.Fatal("deleted object exists")
	}
	if _, err := s.Download(ctx, ref.StorageKey); !errors.Is(err, media.ErrNotFound) {
		t.Fatalf("download of a deleted object: %v", err)
	}
	if err := s.Delete(ctx, ref.StorageKey); err != nil {
		t.Fatalf("deleting a missing object: %v", err)
	}
	deleteSession(t, s)
	concurrentWrites(t, s)
	// Every backend refuses the same keys: none this package makes, and
	// none a path or URL would read as another (S3 takes any bytes, but a
	// browser resolves "./" in a signed URL before sending it).
	for _, key := range []string{"../escape", "/abs", "a/../../b", "", "a\x00b", "a//b", "a/./b", "./a", "a/", "a\\b", ".", "..", "a/..", "a/\xffb"} {
		if err := s.Upload(ctx, key, bytes.NewReader([]byte("x")), 1, ""); !errors.Is(err, media.ErrInvalidKey) {
			t.Errorf("Upload(%q) = %v, want ErrInvalidKey", key, err)
		}
		if _, err := s.Download(ctx, key); !errors.Is(err, media.ErrInvalidKey) {
			t.Errorf("Download(%q) = %v, want ErrInvalidKey", key, err)
		}
	}
}

// deleteSession checks media.DeleteSession: every object of the session
// goes (its owner's, and the older layout's it names), the same session id
// of another database or user, the older layout's objects it does not name
// and other sessions stay, a second call is not an error, and a prefix that
// is not a key directory is refused.
func deleteSession(t *testing.T, s media.Storage) {
	t.Helper()
	ctx := context.Background()
	doomed := media.Owner{DB: "db1", User: "alice", Session: "doomed"}
	var gone, kept []*media.Reference
	for i := range 3 {
		ref, err := media.Put(ctx, s, doomed, "file", "text/plain", "a.txt", []byte(strings.Repeat("d", i+1)))
		if err != nil {
			t.Fatal(err)
		}
		gone = append(gone, ref)
	}
	// An object of the layout before owners, under the session id alone.
	legacy, err := media.Key("doomed", strings.Repeat("ab", 32)+".txt")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Upload(ctx, legacy, bytes.NewReader([]byte("old")), 3, "text/plain"); err != nil {
		t.Fatal(err)
	}
	gone = append(gone, &media.Reference{StorageKey: legacy})
	// Another object under the same directory of the older layout, which
	// the session's runs do not reference (the same session id in another
	// database, or of another user, shared the directory): it stays.
	shared, err := media.Key("doomed", strings.Repeat("cd", 32)+".txt")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Upload(ctx, shared, bytes.NewReader([]byte("theirs")), 6, "text/plain"); err != nil {
		t.Fatal(err)
	}
	kept = append(kept, &media.Reference{StorageKey: shared})
	for _, o := range []media.Owner{{DB: "db1", User: "alice", Session: "kept"}, {DB: "db1", User: "alice", Session: "doomed-but-not-quite"},
		{DB: "db2", User: "alice", Session: "doomed"}, {DB: "db1", User: "bob", Session: "doomed"}} {
		ref, err := media.Put(ctx, s, o, "file", "text/plain", "a.txt", []byte("k"))
		if err != nil {
			t.Fatal(err)
		}
		kept = append(kept, ref)
	}
	// A legacy key that is not under the session's directory is refused,
	// and nothing is deleted.
	for _, bad := range []string{"sessions/other/x.txt", gone[0].StorageKey, "../x"} {
		if err := media.DeleteSession(ctx, s, doomed, bad); !errors.Is(err, media.ErrInvalidKey) {
			t.Errorf("DeleteSession with the legacy key %q = %v, want ErrInvalidKey", bad, err)
		}
	}
	if ok, err := s.Exists(ctx, gone[0].StorageKey); !ok || err != nil {
		t.Fatalf("a refused DeleteSession deleted %s: %v, %v", gone[0].StorageKey, ok, err)
	}
	if err := media.DeleteSession(ctx, s, doomed, legacy); err != nil {
		t.Fatalf("DeleteSession: %v", err)
	}
	for _, ref := range gone {
		if ok, err := s.Exists(ctx, ref.StorageKey); ok || err != nil {
			t.Errorf("%s of the deleted session: exists = %v, %v", ref.StorageKey, ok, err)
		}
	}
	for _, ref := range kept {
		if ok, err := s.Exists(ctx, ref.StorageKey); !ok || err != nil {
			t.Errorf("%s of another owner: exists = %v, %v", ref.StorageKey, ok, err)
		}
	}
	if err := media.DeleteSession(ctx, s, doomed); err != nil {
		t.Fatalf("DeleteSession of a session without media: %v", err)
	}
	for _, prefix := range []string{"", "/", "sessions", "/abs/", "../", "a/../", "a//", "./", "a\x00/"} {
		if err := s.DeletePrefix(ctx, prefix); !errors.Is(err, media.ErrInvalidKey) {
			t.Errorf("DeletePrefix(%q) = %v, want ErrInvalidKey", prefix, err)
		}
	}
	for _, ref := range kept {
		if ok, _ := s.Exists(ctx, ref.StorageKey); !ok {
			t.Fatalf("%s deleted by a refused prefix", ref.StorageKey)
		}
		if err := s.Delete(ctx, ref.StorageKey); err != nil {
			t.Fatal(err)
		}
	}
}

// concurrentWrites checks that concurrent Puts of the same bytes all
// succeed with one object, and that concurrent Uploads of different bytes
// to one key leave one of them whole, never a mix or a part.
func concurrentWrites(t *testing.T, s media.Storage) {
	t.Helper()
	ctx := context.Background()
	owner := media.Owner{DB: "db", User: "carol", Session: "concurrent"}
	content := bytes.Repeat([]byte("same bytes "), 20_000)
	const n = 6
	refs := make([]*media.Reference, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { refs[i], errs[i] = media.Put(ctx, s, owner, "file", "text/plain", "same.txt", content) })
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil || refs[i].StorageKey != refs[0].StorageKey {
			t.Fatalf("concurrent Put %d: %+v, %v", i, refs[i], errs[i])
		}
	}
	if got, err := media.Get(ctx, s, refs[0]); err != nil || !bytes.Equal(got, content) {
		t.Fatalf("after concurrent Puts: %d bytes, %v", len(got), err)
	}
	key, err := owner.Key(strings.Repeat("cd", 32) + ".bin")
	if err != nil {
		t.Fatal(err)
	}
	bodies := make([][]byte, n)
	for i := range n {
		bodies[i] = bytes.Repeat([]byte{byte('a' + i)}, 100_000+i)
		wg.Go(func() {
			errs[i] = s.Upload(ctx, key, bytes.NewReader(bodies[i]), int64(len(bodies[i])), "application/octet-stream")
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("concurrent Upload %d: %v", i, err)
		}
	}
	r, err := s.Download(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(r)
	r.Close()
	if err != nil || len(got) < 100_000 || int(got[0]-'a') >= n || !bytes.Equal(got, bodies[got[0]-'a']) {
		t.Fatalf("after concurrent Uploads: %d bytes, %v", len(got), err)
	}
	if err := media.DeleteSession(ctx, s, owner); err != nil {
		t.Fatal(err)
	}
}
