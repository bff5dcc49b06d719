package agentfs

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"path"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentryhq/agentry/db"
)

// Defaults of Config's zero values.
const (
	DefaultNamespace         = "agentfs"
	DefaultMaxFileBytes      = 8 << 20
	DefaultMaxNamespaceBytes = 200 << 20
	DefaultMaxNamespaceFiles = 10_000
)

var (
	// ErrNotFound: no such file in the caller's namespace (files of another
	// session or user are reported so too). It wraps db.ErrNotFound.
	ErrNotFound = fmt.Errorf("agentfs: file not found: %w", db.ErrNotFound)
	// ErrNoSession: a call without a session id; every file belongs to one.
	ErrNoSession = errors.New("agentfs: a session id is required")
	// ErrInvalidScope: a user id holding a NUL byte (the namespace hashes
	// the user and session ids joined by one: such an id would name
	// another user's namespace).
	ErrInvalidScope = errors.New("agentfs: invalid scope")
	// ErrInvalidPath: a path that is empty, absolute, not clean (.., //),
	// not UTF-8, holds a NUL byte, ends in a space or is longer than
	// db.MaxFilePath; a List prefix that is not UTF-8 or holds a NUL.
	ErrInvalidPath = errors.New("agentfs: invalid path")
	// ErrFileTooLarge: content over Config.MaxFileBytes.
	ErrFileTooLarge = errors.New("agentfs: file too large")
	// ErrQuotaExceeded: the write would take the namespace over
	// Config.MaxNamespaceBytes or Config.MaxNamespaceFiles; delete files or
	// wait for the sweep.
	ErrQuotaExceeded = errors.New("agentfs: namespace quota exceeded")
	// ErrVersionConflict: WriteOptions.IfVersion did not match; it is
	// db.ErrVersionConflict.
	ErrVersionConflict = db.ErrVersionConflict
)

// Config configures an FS. Only DB is required.
type Config struct {
	DB *db.DB
	// Namespace prefixes every namespace this FS uses (default "agentfs");
	// at most 64 bytes of UTF-8, no "/" or NUL (Postgres stores no NUL).
	Namespace string
	// MaxFileBytes caps one file (default 8 MB).
	MaxFileBytes int64
	// MaxNamespaceBytes caps what one (user, session) namespace holds
	// (default 200 MB).
	MaxNamespaceBytes int64
	// MaxNamespaceFiles caps how many files one namespace holds (default
	// 10,000): empty files cost no bytes, and each quota write sums its
	// namespace, so files without a cap cost time and rows without bound.
	MaxNamespaceFiles int
	// TTL is how long a file lives after its last write before Sweep
	// deletes it; zero keeps files until deleted.
	TTL time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// Scope is whose files a call addresses: a session and its user ("" for
// none). It selects the namespace, so it is the access check.
type Scope struct {
	SessionID string
	UserID    string
}

// Info describes a stored file.
type Info struct {
	Path      string `json:"path"`
	Size      int64  `json:"size"`
	Version   int64  `json:"version"`
	CreatedAt int64  `json:"created_at"`
	UpdatedAt int64  `json:"updated_at"`
}

// WriteOptions are per-write knobs.
type WriteOptions struct {
	// IfVersion, when set, writes only if the file is at this version (0:
	// only if it does not exist); ErrVersionConflict otherwise.
	IfVersion *int64
}

// FS is AgentFS. It is safe for concurrent use.
type FS struct {
	cfg Config
}

// New validates cfg and returns an FS.
func New(cfg Config) (*FS, error) {
	if cfg.DB == nil {
		return nil, errors.New("agentfs: Config.DB is required")
	}
	if cfg.Namespace == "" {
		cfg.Namespace = DefaultNamespace
	}
	if len(cfg.Namespace) > 64 || strings.ContainsAny(cfg.Namespace, "/\x00") || !utf8.ValidString(cfg.Namespace) {
		return nil, fmt.Errorf("agentfs: Config.Namespace %q must be at most 64 bytes of UTF-8 without \"/\" or NUL", cfg.Namespace)
	}
	if cfg.MaxFileBytes < 0 || cfg.MaxNamespaceBytes < 0 || cfg.MaxNamespaceFiles < 0 || cfg.TTL < 0 {
		return nil, errors.New("agentfs: MaxFileBytes, MaxNamespaceBytes, MaxNamespaceFiles and TTL must not be negative")
	}
	if cfg.MaxFileBytes == 0 {
		cfg.MaxFileBytes = DefaultMaxFileBytes
	}
	if cfg.MaxNamespaceBytes == 0 {
		cfg.MaxNamespaceBytes = DefaultMaxNamespaceBytes
	}
	if cfg.MaxNamespaceFiles == 0 {
		cfg.MaxNamespaceFiles = DefaultMaxNamespaceFiles
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &FS{cfg: cfg}, nil
}

// Config returns the configuration after defaults.
func (fs *FS) Config() Config { return fs.cfg }

// namespace derives the scope's namespace: the prefix and a hash of the user
// and session (ids may be long or hold any character but a NUL in the user
// id; the hash is fixed size and, the first NUL ending the user id,
// unambiguous).
func (fs *FS) namespace(s Scope) (string, error) {
	if s.SessionID == "" {
		return "", ErrNoSession
	}
	if strings.ContainsRune(s.UserID, 0) {
		// user "u\x00s" in session "x" would be user "u" in session "s\x00x"
		return "", fmt.Errorf("%w: the user id holds a NUL byte", ErrInvalidScope)
	}
	h := sha256.Sum256([]byte(s.UserID + "\x00" + s.SessionID))
	return fs.cfg.Namespace + "/" + hex.EncodeToString(h[:16]), nil
}

// CheckPath validates a file path.
func CheckPath(p string) error {
	switch {
	case p == "" || len(p) > db.MaxFilePath:
		return fmt.Errorf("%w: a path is 1 to %d bytes", ErrInvalidPath, db.MaxFilePath)
	case !utf8.ValidString(p) || strings.ContainsRune(p, 0):
		return fmt.Errorf("%w: %q is not UTF-8 text", ErrInvalidPath, p)
	case strings.HasPrefix(p, "/") || path.Clean(p) != p || p == "." || p == ".." || strings.HasPrefix(p, "../"):
		return fmt.Errorf("%w: %q must be relative and clean (no \"..\", \"//\" or trailing \"/\")", ErrInvalidPath, p)
	case strings.HasSuffix(p, " "):
		// MySQL's collations pad with spaces: "a " is "a" there, so a
		// write of "a " overwrote "a" and a delete of it deleted "a"
		return fmt.Errorf("%w: %q must not end in a space", ErrInvalidPath, p)
	}
	return nil
}

func info(f *db.File) Info {
	return Info{Path: f.Path, Size: f.SizeBytes, Version: f.Version, CreatedAt: f.CreatedAt, UpdatedAt: f.UpdatedAt}
}

// Write stores content at p in the scope's namespace, within the quotas.
func (fs *FS) Write(ctx context.Context, s Scope, p string, content []byte, opts WriteOptions) (Info, error) {
	ns, err := fs.namespace(s)
	if err != nil {
		return Info{}, err
	}
	if err := CheckPath(p); err != nil {
		return Info{}, err
	}
	if n := int64(len(content)); n > fs.cfg.MaxFileBytes {
		return Info{}, fmt.Errorf("%w: %d bytes, the limit is %d", ErrFileTooLarge, n, fs.cfg.MaxFileBytes)
	}
	if err := fs.dropExpired(ctx, ns); err != nil {
		return Info{}, err
	}
	out, err := fs.cfg.DB.PutFileWithinQuota(ctx, &db.File{Namespace: ns, Path: p, Content: content},
		db.FileQuota{MaxBytes: fs.cfg.MaxNamespaceBytes, MaxFiles: fs.cfg.MaxNamespaceFiles, IfVersion: opts.IfVersion})
	if errors.Is(err, db.ErrNamespaceFull) {
		return Info{}, fmt.Errorf("%w: writing %d bytes to %s: %w", ErrQuotaExceeded, len(content), p, err)
	}
	if err != nil {
		return Info{}, err
	}
	return info(out), nil
}

// Read returns a file's content and description.
func (fs *FS) Read(ctx context.Context, s Scope, p string) ([]byte, Info, error) {
	ns, err := fs.namespace(s)
	if err != nil {
		return nil, Info{}, err
	}
	if err := CheckPath(p); err != nil {
		return nil, Info{}, err
	}
	f, err := fs.cfg.DB.GetFile(ctx, ns, p)
	if errors.Is(err, db.ErrNotFound) {
		return nil, Info{}, fmt.Errorf("%w: %s", ErrNotFound, p)
	}
	if err != nil {
		return nil, Info{}, err
	}
	if fs.expired(f.UpdatedAt, f.CreatedAt) {
		return nil, Info{}, fmt.Errorf("%w: %s (expired)", ErrNotFound, p)
	}
	return f.Content, info(f), nil
}

// expired reports a file last written over the TTL ago. A file without an
// updated_at (NULL, read as 0: Agno's column is nullable) was last written
// when it was created, as the sweep (DeleteFilesBefore) counts it too.
func (fs *FS) expired(updatedAt, createdAt int64) bool {
	if updatedAt == 0 {
		updatedAt = createdAt
	}
	return fs.cfg.TTL > 0 && updatedAt < fs.cfg.Now().Add(-fs.cfg.TTL).Unix()
}

// dropExpired deletes the namespace's expired files. Reads call them
// missing; a write must too: else a create-only write (IfVersion 0) fails
// on a file Read and Stat say is not there, a rewrite continues its old
// version, and the quota counts bytes no one can read.
func (fs *FS) dropExpired(ctx context.Context, ns string) error {
	if fs.cfg.TTL <= 0 {
		return nil
	}
	// ns ends in a fixed-length hash: as a prefix it is this namespace only
	_, err := fs.cfg.DB.DeleteFilesBefore(ctx, ns, fs.cfg.Now().Add(-fs.cfg.TTL).Unix())
	return err
}

// stat reads one file's row by its key (a listing under the path as a
// prefix read every file below it too: Stat("d") read all of "d/...").
func (fs *FS) stat(ctx context.Context, ns, p string) (Info, error) {
	f, err := fs.cfg.DB.StatFile(ctx, ns, p)
	if errors.Is(err, db.ErrNotFound) {
		return Info{}, fmt.Errorf("%w: %s", ErrNotFound, p)
	}
	if err != nil {
		return Info{}, err
	}
	return info(f), nil
}

// Stat describes a file without reading it.
func (fs *FS) Stat(ctx context.Context, s Scope, p string) (Info, error) {
	ns, err := fs.namespace(s)
	if err != nil {
		return Info{}, err
	}
	if err := CheckPath(p); err != nil {
		return Info{}, err
	}
	in, err := fs.stat(ctx, ns, p)
	if err == nil && fs.expired(in.UpdatedAt, in.CreatedAt) {
		return Info{}, fmt.Errorf("%w: %s (expired)", ErrNotFound, p)
	}
	return in, err
}

// List describes the scope's files whose path starts with prefix, by path.
func (fs *FS) List(ctx context.Context, s Scope, prefix string) ([]Info, error) {
	ns, err := fs.namespace(s)
	if err != nil {
		return nil, err
	}
	if !utf8.ValidString(prefix) || strings.ContainsRune(prefix, 0) {
		return nil, fmt.Errorf("%w: prefix %q is not UTF-8 text", ErrInvalidPath, prefix)
	}
	files, err := fs.cfg.DB.ListFiles(ctx, ns, prefix)
	if err != nil {
		return nil, err
	}
	out := make([]Info, 0, len(files))
	for i := range files {
		// MySQL compares with padding: "a" matched the prefix "a "
		if !fs.expired(files[i].UpdatedAt, files[i].CreatedAt) && strings.HasPrefix(files[i].Path, prefix) {
			out = append(out, info(&files[i]))
		}
	}
	return out, nil
}

// Delete deletes a file; a missing file is not an error.
func (fs *FS) Delete(ctx context.Context, s Scope, p string) error {
	ns, err := fs.namespace(s)
	if err != nil {
		return err
	}
	if err := CheckPath(p); err != nil {
		return err
	}
	return fs.cfg.DB.DeleteFile(ctx, ns, p)
}

// Usage returns what the scope's namespace holds (its expired files are
// deleted first: they count against no quota).
func (fs *FS) Usage(ctx context.Context, s Scope) (db.FileUsage, error) {
	ns, err := fs.namespace(s)
	if err != nil {
		return db.FileUsage{}, err
	}
	if err := fs.dropExpired(ctx, ns); err != nil {
		return db.FileUsage{}, err
	}
	return fs.cfg.DB.FileUsage(ctx, ns)
}

// Sweep deletes every file of this FS (all scopes) not written within the
// TTL and returns how many; without a TTL it deletes nothing. Reads already
// treat such files as missing, so a late sweep is never visible.
func (fs *FS) Sweep(ctx context.Context) (int64, error) {
	if fs.cfg.TTL <= 0 {
		return 0, nil
	}
	return fs.cfg.DB.DeleteFilesBefore(ctx, fs.cfg.Namespace+"/", fs.cfg.Now().Add(-fs.cfg.TTL).Unix())
}

// SweepEvery runs Sweep at an interval until ctx ends; errors are passed to
// onErr (nil ignores them). An interval that is not positive is such an
// error, and SweepEvery returns (time.NewTicker would panic, in the
// goroutine it is run in: the whole process).
func (fs *FS) SweepEvery(ctx context.Context, interval time.Duration, onErr func(error)) {
	if interval <= 0 {
		if onErr != nil {
			onErr(fmt.Errorf("agentfs: sweep interval %v: it must be positive", interval))
		}
		return
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if _, err := fs.Sweep(ctx); err != nil && onErr != nil {
				onErr(err)
			}
		}
	}
}

// NamespaceOf returns the namespace holding a scope's files (for index rows
// that point at them).
func (fs *FS) NamespaceOf(s Scope) (string, error) { return fs.namespace(s) }
