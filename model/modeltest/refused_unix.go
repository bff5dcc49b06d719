//go:build unix

package modeltest

import (
	"net"
	"strconv"
	"syscall"
	"testing"
)

// boundNotListening binds a TCP socket to a free loopback port without
// listening on it, closed when t ends: a connection to the port is
// refused, and no other socket can bind the port while this one holds it.
func boundNotListening(t testing.TB) (string, bool) {
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err != nil {
		return "", false
	}
	syscall.CloseOnExec(fd)
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		syscall.Close(fd)
		return "", false
	}
	sa, err := syscall.Getsockname(fd)
	in4, ok := sa.(*syscall.SockaddrInet4)
	if err != nil || !ok {
		syscall.Close(fd)
		return "", false
	}
	t.Cleanup(func() { syscall.Close(fd) })
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(in4.Port)), true
}
