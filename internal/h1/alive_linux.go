package h1

import (
	"net"
	"syscall"
)

// alive reports whether the idle connection c is still open: a peek that
// does not wait finds nothing to read. A server that closed it (its idle
// timeout, a restart) has left an end of stream there, and one that wrote
// to an idle connection has broken the protocol; either way the
// connection is not reused.
func alive(c net.Conn) bool {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return true
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	var buf [1]byte
	open := false
	err = raw.Read(func(fd uintptr) bool {
		_, _, rerr := syscall.Recvfrom(int(fd), buf[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		open = rerr == syscall.EAGAIN || rerr == syscall.EWOULDBLOCK
		return true // never wait: the answer is now
	})
	return err == nil && open
}
