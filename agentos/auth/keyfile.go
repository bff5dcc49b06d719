package auth

import (
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// MaxKeyFileBytes bounds a key file read by LoadKey.
const MaxKeyFileBytes = 1 << 20

// keyFileExts are extensions that make an entry a file name, never a secret.
var keyFileExts = map[string]bool{
	".pem": true, ".crt": true, ".cer": true, ".der": true, ".pub": true, ".key": true,
	".json": true, ".jwk": true, ".jwks": true, ".txt": true,
}

// LoadKey reads one verification_keys entry, which is one of:
//
//   - a PEM public key or certificate (text starting with "-----BEGIN");
//   - a path to a readable file holding a PEM key or a JSON Web Key Set, read
//     as such (relative paths are resolved against dir, "" meaning the working
//     directory; "~/" is the home directory);
//   - an HMAC secret of at least MinHMACSecretBytes bytes that does not look
//     like a path (see LooksLikePath).
//
// An entry that looks like a path but cannot be read is an error naming it:
// taking it for a secret would let anyone who knows the path sign tokens. A
// JWKS file gives its keys their own kids, so id must then be empty.
func LoadKey(id, entry, dir string) ([]Key, error) {
	if strings.HasPrefix(strings.TrimSpace(entry), "-----BEGIN") {
		k, err := ParseKey(id, entry)
		return []Key{k}, err
	}
	path := resolvePath(entry, dir)
	if LooksLikePath(entry) || isRegularFile(path) {
		return loadKeyFile(id, entry, path)
	}
	k, err := ParseKey(id, entry)
	return []Key{k}, err
}

func loadKeyFile(id, entry, path string) ([]Key, error) {
	data, err := readKeyFile(path)
	if err != nil {
		var pe *fs.PathError
		if !pathShaped(strings.TrimSpace(entry)) && errors.As(err, &pe) {
			err = pe.Err // the path is the entry: perhaps a secret
		}
		return nil, fmt.Errorf("auth: verification key %s looks like a file path but cannot be read (%w); fix the path, or give the key itself", shownEntry(entry), err)
	}
	text := strings.TrimSpace(string(data))
	switch {
	case strings.HasPrefix(text, "-----BEGIN"):
		k, err := ParseKey(id, text)
		if err != nil {
			return nil, fmt.Errorf("auth: verification key file %s: %w", path, err)
		}
		return []Key{k}, nil
	case strings.HasPrefix(text, "{"):
		if id != "" {
			return nil, fmt.Errorf("auth: verification key file %s is a JWKS, whose keys carry their own kid; remove kid %q", path, id)
		}
		keys, err := ParseJWKS(data)
		if err != nil {
			return nil, fmt.Errorf("auth: verification key file %s: %w", path, err)
		}
		return keys, nil
	}
	return nil, fmt.Errorf("auth: verification key file %s holds neither a PEM key nor a JWKS; an HMAC secret goes in the entry itself", path)
}

// errNotRegular: a key path names a directory, a FIFO, a device.
var errNotRegular = errors.New("not a regular file")

// readKeyFile reads at most MaxKeyFileBytes of a regular file.
func readKeyFile(path string) ([]byte, error) {
	// Checked before opening as well as after: opening a FIFO for reading
	// waits for a writer, and the server would hang at start.
	if st, err := os.Stat(path); err != nil {
		return nil, err
	} else if !st.Mode().IsRegular() {
		return nil, &fs.PathError{Op: "read", Path: path, Err: errNotRegular}
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, &fs.PathError{Op: "read", Path: path, Err: errNotRegular}
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxKeyFileBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > MaxKeyFileBytes {
		return nil, fmt.Errorf("%s is larger than %d bytes", path, MaxKeyFileBytes)
	}
	return data, nil
}

func resolvePath(entry, dir string) string {
	if rest, ok := strings.CutPrefix(entry, "~"); ok && (rest == "" || rest[0] == '/' || rest[0] == filepath.Separator) {
		if home, err := os.UserHomeDir(); err == nil {
			return filepath.Join(home, rest)
		}
	}
	if dir != "" && !filepath.IsAbs(entry) && !strings.HasPrefix(entry, "~") {
		return filepath.Join(dir, entry)
	}
	return entry
}

func isRegularFile(path string) bool {
	if strings.ContainsAny(path, "\r\n\x00") {
		return false
	}
	st, err := os.Stat(path)
	return err == nil && st.Mode().IsRegular()
}

// LooksLikePath reports whether a verification key entry reads as a file path
// rather than a secret: it starts with "/", "./", "../", "~", a Windows drive
// or "\", ends in a key file extension (.pem, .crt, .cer, .der, .pub, .key,
// .json, .jwk, .jwks, .txt), or contains a path separator. One exception keeps
// the common secrets usable: a string that is valid padded standard base64
// mixing upper case, lower case and digits (what `openssl rand -base64 32` and
// most identity providers print) is a secret even though it may contain "/".
// Hex and base64url secrets never contain a separator. Multi-line text (PEM)
// is not a path.
func LooksLikePath(entry string) bool {
	s := strings.TrimSpace(entry)
	if s == "" || strings.ContainsAny(s, "\r\n") {
		return false
	}
	if pathShaped(s) || strings.Contains(s, "\\") {
		return true
	}
	return strings.Contains(s, "/") && !isBase64Secret(s)
}

// pathShaped reports the signs that make a trimmed entry a path beyond
// doubt: a relative, home, UNC or drive prefix, or a key file extension.
// A secret has none of them; an entry with a separator alone may be one
// (unpadded base64 holds "/").
func pathShaped(s string) bool {
	for _, prefix := range []string{"./", "../", ".\\", "..\\", "~", "\\"} {
		if strings.HasPrefix(s, prefix) {
			return true
		}
	}
	if len(s) >= 3 && isASCIILetter(s[0]) && s[1] == ':' && (s[2] == '\\' || s[2] == '/') {
		return true
	}
	return keyFileExts[strings.ToLower(filepath.Ext(s))]
}

// shownEntry is how an error names an entry taken for a path: quoted when
// it is shaped like one beyond doubt (pathShaped), else by its length
// only. An entry taken for a path by a separator alone may be a secret
// (unpadded base64), and these errors end in the server's start-up log.
func shownEntry(entry string) string {
	if pathShaped(strings.TrimSpace(entry)) {
		return strconv.Quote(entry)
	}
	return fmt.Sprintf("(%d characters, not shown: it may be a secret)", len(entry))
}

func isBase64Secret(s string) bool {
	if _, err := base64.StdEncoding.Strict().DecodeString(s); err != nil {
		return false
	}
	return strings.ContainsAny(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZ") &&
		strings.ContainsAny(s, "abcdefghijklmnopqrstuvwxyz") &&
		strings.ContainsAny(s, "0123456789")
}

func isASCIILetter(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }
