//go:build !unix

package files

import "os"

// readFlags open a file for reading (see openflags_unix.go).
const readFlags = os.O_RDONLY
