//go:build unix

package files

import (
	"os"
	"syscall"
)

// readFlags open a file for reading without blocking in open: a named pipe
// put in a regular file's place between openRegular's Stat and its open
// does not hold the open until a writer comes (its fstat then refuses it).
// Regular files ignore O_NONBLOCK.
const readFlags = os.O_RDONLY | syscall.O_NONBLOCK
