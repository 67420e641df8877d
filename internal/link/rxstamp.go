package link

import (
	"encoding/binary"
	"io"
	"net"
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// stampedReader reads a connection and tells when what it read arrived.
//
// A goroutine blocked in Read wakes some tens of microseconds after data
// arrives (more when the CPU was idle), and a stamp taken then would add that
// to every hop of the link. On sockets the kernel's receive timestamp
// (SO_TIMESTAMPNS, the arrival of the last segment read) is used instead;
// other connections, and tests on a fake clock, are stamped with the clock.
type stampedReader struct {
	conn net.Conn
	clk  clock
	rc   syscall.RawConn // nil: stamp with clk
	oob  []byte
}

func newStampedReader(c net.Conn, clk clock, kernel bool) *stampedReader {
	r := &stampedReader{conn: c, clk: clk}
	sc, ok := c.(syscall.Conn)
	if !kernel || !ok {
		return r
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return r
	}
	var serr error
	if err := rc.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1)
	}); err != nil || serr != nil {
		return r
	}
	r.rc, r.oob = rc, make([]byte, unix.CmsgSpace(16))
	return r
}

// Read reads into p and returns when the bytes arrived.
func (r *stampedReader) Read(p []byte) (int, time.Time, error) {
	if r.rc == nil {
		n, err := r.conn.Read(p)
		return n, r.clk.Now(), err
	}
	var n, oobn int
	var rerr error
	err := r.rc.Read(func(fd uintptr) bool {
		n, oobn, _, _, rerr = unix.Recvmsg(int(fd), p, r.oob, 0)
		return rerr != unix.EAGAIN && rerr != unix.EINTR
	})
	now := time.Now()
	switch {
	case err != nil:
		return 0, now, err
	case rerr != nil:
		return 0, now, os.NewSyscallError("recvmsg", rerr)
	case n == 0 && len(p) > 0:
		return 0, now, io.EOF
	}
	return n, kernelStamp(now, r.oob[:oobn]), nil
}

// kernelStamp returns the kernel's receive time from a control message, on now's
// monotonic clock, or now when there is none. The kernel stamps with the
// wall clock: only the (small) difference to now's wall reading is used, and
// nothing is trusted that is in the future or more than a second old.
func kernelStamp(now time.Time, oob []byte) time.Time {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return now
	}
	for _, m := range msgs {
		if m.Header.Level != unix.SOL_SOCKET || m.Header.Type != unix.SCM_TIMESTAMPNS || len(m.Data) < 16 {
			continue
		}
		sec := int64(binary.NativeEndian.Uint64(m.Data[0:8]))
		nsec := int64(binary.NativeEndian.Uint64(m.Data[8:16]))
		age := now.Round(0).Sub(time.Unix(sec, nsec))
		if age > 0 && age < time.Second {
			return now.Add(-age)
		}
	}
	return now
}
