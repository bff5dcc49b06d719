//go:build unix

package files

import "syscall"

// nonblock makes an open not wait: a named pipe put in a regular file's
// place between a tool's Stat and its open does not hold the open until a
// peer comes (a write's open fails at once, ENXIO; a read's returns, and
// the fstat after it refuses the pipe). Regular files ignore O_NONBLOCK.
const nonblock = syscall.O_NONBLOCK
