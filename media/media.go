package media

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"mime"
	"path"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

var (
	// ErrNotFound: no object under the key (or the key belongs to another
	// session or user).
	ErrNotFound = errors.New("media: not found")
	// ErrInvalidKey: a key that is not one this package makes (path
	// traversal, absolute paths, other characters).
	ErrInvalidKey = errors.New("media: invalid key")
	// ErrUnavailable: the storage backend failed or could not be reached;
	// nothing was referenced.
	ErrUnavailable = errors.New("media: storage unavailable")
)

// Storage stores media objects by key. Implementations: media/local and
// media/s3.
type Storage interface {
	// Upload stores size bytes from r under key with a content type.
	Upload(ctx context.Context, key string, r io.Reader, size int64, contentType string) error
	// Download opens the object; ErrNotFound when it does not exist.
	Download(ctx context.Context, key string) (io.ReadCloser, error)
	// URL returns a URL that reads the object until expiry (signed), or ""
	// when the backend cannot sign.
	URL(ctx context.Context, key string, expiry time.Duration) (string, error)
	// Delete removes the object; a missing one is not an error.
	Delete(ctx context.Context, key string) error
	// DeletePrefix removes every object whose key starts with prefix, a
	// directory of keys ending in "/" (SessionDir); none is not an error.
	// A prefix that is not a valid key directory is ErrInvalidKey.
	DeletePrefix(ctx context.Context, prefix string) error
	// Exists reports whether the object exists.
	Exists(ctx context.Context, key string) (bool, error)
	// Backend names the kind ("local", "s3") and Bucket the bucket ("" for
	// local), as stored in references.
	Backend() string
	Bucket() string
}

// Reference replaces a media object's bytes in a stored run (Agno's
// media_reference).
type Reference struct {
	MediaID        string `json:"media_id"`
	StorageKey     string `json:"storage_key"`
	SessionID      string `json:"session_id,omitempty"`
	StorageBackend string `json:"storage_backend"`
	Bucket         string `json:"bucket,omitempty"`
	// URL is set only for a public (not presigned) object.
	URL         string `json:"url,omitempty"`
	MimeType    string `json:"mime_type,omitempty"`
	Filename    string `json:"filename,omitempty"`
	Size        int64  `json:"size"`
	ContentHash string `json:"content_hash"`
	MediaType   string `json:"media_type"`
}

// Name is the last element of a storage key: the content's SHA-256 and an
// extension ("3a7b…e1.jpg"); it is what the media route takes.
var nameRE = regexp.MustCompile(`^[0-9a-f]{64}(\.[a-z0-9]{1,10})?$`)

// CheckName validates the name part of a key.
func CheckName(name string) error {
	if !nameRE.MatchString(name) {
		return fmt.Errorf("%w: %q is not <sha256>[.ext]", ErrInvalidKey, name)
	}
	return nil
}

// Owner names whose media an object is: the database holding the session
// (its db_id), the session's user and the session. Keys are made from all
// three, so the same session id in two databases, or named by two users,
// never shares an object (user isolation).
type Owner struct {
	DB, User, Session string
}

// Dir is the key prefix of the owner's media (under the storage prefix): a
// hash of the three ids, each length-prefixed, so any ids make a safe path
// and no two owners share one.
func (o Owner) Dir() string {
	h := sha256.Sum256(fmt.Appendf(nil, "%d:%s%d:%s%d:%s", len(o.DB), o.DB, len(o.User), o.User, len(o.Session), o.Session))
	return "owners/" + hex.EncodeToString(h[:16]) + "/"
}

// Key returns the storage key of the owner's object name.
func (o Owner) Key(name string) (string, error) {
	if o.Session == "" {
		return "", fmt.Errorf("%w: media needs a session id", ErrInvalidKey)
	}
	if err := CheckName(name); err != nil {
		return "", err
	}
	return o.Dir() + name, nil
}

// SessionDir is the key prefix of a session's media in the layout before
// Owner (the session id alone, hashed, shared by every database and user):
// objects stored under it stay readable through the references to them,
// but nothing new is stored there.
func SessionDir(sessionID string) string {
	h := sha256.Sum256([]byte(sessionID))
	return "sessions/" + hex.EncodeToString(h[:12]) + "/"
}

// DeleteSession removes every object of a session: those under its
// owner's Dir, and of the layout before Owner the objects legacy names
// (the keys under the session id's SessionDir that the session's runs
// reference). That older directory had no owner: the same session id in
// another database, or of another user, shared it, so it is never deleted
// whole. A legacy key outside it is ErrInvalidKey, and nothing is deleted.
// A backend failure wraps ErrUnavailable; what was deleted before it stays
// deleted, and calling again finishes the job.
func DeleteSession(ctx context.Context, s Storage, o Owner, legacy ...string) error {
	if o.Session == "" {
		return fmt.Errorf("%w: media needs a session id", ErrInvalidKey)
	}
	dir := SessionDir(o.Session)
	for _, k := range legacy {
		if err := CheckKey(k); err != nil {
			return err
		}
		if !strings.HasPrefix(k, dir) {
			return fmt.Errorf("%w: %q is not an object of session %q", ErrInvalidKey, k, o.Session)
		}
	}
	wrap := func(err error) error {
		if errors.Is(err, ErrUnavailable) || errors.Is(err, ErrInvalidKey) {
			return err
		}
		return fmt.Errorf("%w: delete the media of session %q: %w", ErrUnavailable, o.Session, err)
	}
	if err := s.DeletePrefix(ctx, o.Dir()); err != nil {
		return wrap(err)
	}
	for _, k := range legacy {
		if err := s.Delete(ctx, k); err != nil {
			return wrap(err)
		}
	}
	return nil
}

// CheckKey validates a storage key as every backend takes it: relative,
// clean and UTF-8 ("a/b.jpg"; no "..", "." or empty segments, no trailing
// "/", backslash or control character), the shape of every key this
// package makes. A control character would make an object a listing cannot
// name (an S3-compatible server lists it as U+FFFD), so DeletePrefix would
// leave it behind.
// Backends refuse others with ErrInvalidKey, a disk because they would
// leave its directory or name another file, S3 because a browser resolves
// "./" and "../" in a signed URL before sending it, and because an
// S3-compatible server on a file system maps "a/./b" to "a/b".
func CheckKey(key string) error {
	if key == "" || key == "." || key == ".." || strings.HasPrefix(key, "/") || strings.HasPrefix(key, "../") ||
		path.Clean(key) != key || strings.ContainsAny(key, "\\\x00") || !utf8.ValidString(key) ||
		strings.ContainsFunc(key, isControl) {
		return fmt.Errorf("%w: %q", ErrInvalidKey, key)
	}
	return nil
}

// isControl: C0 controls and DEL.
func isControl(r rune) bool { return r < 0x20 || r == 0x7f }

// CheckPrefix validates a DeletePrefix argument: a relative, clean key
// directory ending in "/" (no "..", no empty or absolute prefix).
func CheckPrefix(prefix string) error {
	dir := strings.TrimSuffix(prefix, "/")
	if dir == "" || dir == prefix || strings.HasPrefix(dir, "/") || strings.Contains(dir, "\\") || strings.ContainsRune(dir, 0) ||
		strings.Contains(prefix, "//") || slices.Contains(strings.Split(dir, "/"), "..") || slices.Contains(strings.Split(dir, "/"), ".") {
		return fmt.Errorf("%w: %q is not a key directory ending in \"/\"", ErrInvalidKey, prefix)
	}
	return nil
}

// Key returns the storage key of a session's object name in the layout
// before Owner (see SessionDir).
func Key(sessionID, name string) (string, error) {
	if sessionID == "" {
		return "", fmt.Errorf("%w: media needs a session id", ErrInvalidKey)
	}
	if err := CheckName(name); err != nil {
		return "", err
	}
	return SessionDir(sessionID) + name, nil
}

// extRE is an extension a name may end in (nameRE), without its dot.
var extRE = regexp.MustCompile(`^[a-z0-9]{1,10}$`)

// extension is the file name's extension, else the last of those the
// machine's MIME tables give the type that a name may end in (the tables
// also hold ".tar.gz" and ".7z.001"), else none.
func extension(mimeType, filename string) string {
	if i := strings.LastIndexByte(filename, '.'); i >= 0 {
		if ext := strings.ToLower(filename[i+1:]); extRE.MatchString(ext) {
			return "." + ext
		}
	}
	exts, _ := mime.ExtensionsByType(mimeType)
	for _, ext := range slices.Backward(exts) {
		if extRE.MatchString(strings.TrimPrefix(ext, ".")) {
			return ext
		}
	}
	return ""
}

// Put uploads content once per owner (the same bytes twice give one
// object: the key is their hash) and returns its reference. Nothing is
// referenced when the upload fails.
func Put(ctx context.Context, s Storage, owner Owner, mediaType, mimeType, filename string, content []byte) (*Reference, error) {
	sum := sha256.Sum256(content)
	hash := hex.EncodeToString(sum[:])
	name := hash + extension(mimeType, filename)
	key, err := owner.Key(name)
	if err != nil {
		return nil, err
	}
	ok, err := s.Exists(ctx, key)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	if !ok {
		if err := s.Upload(ctx, key, bytes.NewReader(content), int64(len(content)), mimeType); err != nil {
			return nil, fmt.Errorf("%w: upload %s: %w", ErrUnavailable, name, err)
		}
	}
	return &Reference{MediaID: name, StorageKey: key, SessionID: owner.Session, StorageBackend: s.Backend(), Bucket: s.Bucket(),
		MimeType: mimeType, Filename: filename, Size: int64(len(content)), ContentHash: hash, MediaType: mediaType}, nil
}

// Get reads a referenced object's bytes, checking their hash. It reads at
// most one byte more than the reference's size (when it has one): an
// object that has grown past it is refused without being read whole.
func Get(ctx context.Context, s Storage, ref *Reference) ([]byte, error) {
	r, err := s.Download(ctx, ref.StorageKey)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	var src io.Reader = r
	if ref.Size > 0 {
		src = io.LimitReader(r, ref.Size+1)
	}
	b, err := io.ReadAll(src)
	if err != nil {
		return nil, fmt.Errorf("%w: read %s: %w", ErrUnavailable, ref.MediaID, err)
	}
	if ref.Size > 0 && int64(len(b)) != ref.Size {
		return nil, fmt.Errorf("media: object %s is not of its referenced size %d", ref.StorageKey, ref.Size)
	}
	if sum := sha256.Sum256(b); hex.EncodeToString(sum[:]) != ref.ContentHash {
		return nil, fmt.Errorf("media: object %s does not match its content hash", ref.StorageKey)
	}
	return b, nil
}

// Inline reports whether a browser may show an object of this content type
// inline without running content of it: raster images, audio, video, PDF
// and plain text. Anything else (HTML, SVG, XML, scripts, unknown types) is
// served as a download (Content-Disposition: attachment): its type comes
// from the client's file name or MIME type, and rendered in a served origin
// it would run the client's scripts there.
func Inline(contentType string) bool {
	mt, _, _ := mime.ParseMediaType(contentType)
	switch {
	case mt == "image/svg+xml":
		return false
	case strings.HasPrefix(mt, "image/"), strings.HasPrefix(mt, "audio/"), strings.HasPrefix(mt, "video/"):
		return true
	}
	return mt == "application/pdf" || mt == "text/plain"
}
