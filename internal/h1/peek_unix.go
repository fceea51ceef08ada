//go:build unix

package h1

import "syscall"

// peekOpen reports whether the socket fd is open with nothing to read: a
// non-blocking peek would block. End of stream (the server closed it),
// bytes the server sent unasked, or an error all say it is not fit for
// another call.
func peekOpen(fd uintptr) bool {
	var b [1]byte
	_, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
	return err == syscall.EAGAIN || err == syscall.EWOULDBLOCK
}
