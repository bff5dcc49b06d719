//go:build unix

package auth

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A key path naming a FIFO (a named pipe left where the key file should
// be) is refused at once: opening it for reading blocked until a writer
// came, so the server hung at start without a word.
func TestLoadKey_RefusesAFIFOWithoutWaitingForAWriter(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "jwt.pem")
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := LoadKey("", path, "")
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Fatalf("LoadKey of a FIFO: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("LoadKey of a FIFO is still waiting for a writer after 5 s")
	}
}
