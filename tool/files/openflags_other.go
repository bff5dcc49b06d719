//go:build !unix

package files

// nonblock is no flag here (see openflags_unix.go).
const nonblock = 0
