//go:build unix

package sqlite

import (
	"errors"
	"os"
	"syscall"
)

// flockFile takes an exclusive, non-blocking flock on path, creating the
// file. release removes the file (users should not find it next to their
// database) before unlocking it. Since a remover can unlink the file between
// another process's open and its flock, a lock taken on a file that path no
// longer names is given back and reported as not acquired (the caller
// retries).
func flockFile(path string) (release func(), ok bool, err error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, false, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, false, nil
		}
		return nil, false, err
	}
	unlock := func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}
	held, err := f.Stat()
	if err != nil {
		unlock()
		return nil, false, err
	}
	if named, err := os.Stat(path); err != nil || !os.SameFile(held, named) {
		unlock()
		return nil, false, nil
	}
	return func() {
		_ = os.Remove(path)
		unlock()
	}, true, nil
}

// hasUnixVFS: SQLite here has its unix VFSes (Config.Exclusive).
const hasUnixVFS = true
