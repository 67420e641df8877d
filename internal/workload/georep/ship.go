package georep

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"

	"github.com/klauspost/compress/zstd"

	"github.com/dbrig/dbrig/internal/replication"
)

// shipper carries a backup archive from the publisher's site to the
// subscriber's across the study's link, compressed with zstd on the way:
// the seed's fastest initialization of a subscriber was a compressed
// backup shipped across the WAN and restored there.
type shipper struct {
	// via returns the address through which site from reaches a listener
	// at site to (study.Env.Via).
	via      func(ctx context.Context, from, to, upstream string) (string, error)
	from, to string

	mu      sync.Mutex
	shipped int64 // compressed bytes that crossed
}

// Shipped is what crossed the link, compressed.
func (s *shipper) Shipped() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.shipped
}

// carry implements replication.Carrier.
func (s *shipper) carry(ctx context.Context, archive io.Reader) (io.ReadCloser, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0") // at the subscriber's site
	if err != nil {
		return nil, err
	}
	defer ln.Close()
	addr, err := s.via(ctx, s.from, s.to, ln.Addr().String())
	if err != nil {
		return nil, err
	}
	c, err := (&net.Dialer{}).DialContext(ctx, "tcp", addr) // at the publisher's site
	if err != nil {
		return nil, fmt.Errorf("connect across the link: %w", err)
	}
	stopAccept := context.AfterFunc(ctx, func() { ln.Close() })
	in, err := ln.Accept()
	stopAccept()
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("accept the archive: %w", err)
	}
	r := &shipped{in: in, sent: make(chan error, 1)}
	go func() { // owned by r: Close waits for it
		n, err := compressTo(c, archive)
		s.mu.Lock()
		s.shipped += n
		s.mu.Unlock()
		r.sent <- err
	}()
	r.stop = context.AfterFunc(ctx, func() { in.Close(); c.Close() })
	if r.dec, err = zstd.NewReader(in); err != nil {
		r.Close()
		return nil, err
	}
	return r, nil
}

// newShipperEncoder is the shipper's compression, in one place so that
// the model's bytes a row (shippedBytesPerRow) are the ones it sends.
func newShipperEncoder(w io.Writer) (*zstd.Encoder, error) {
	return zstd.NewWriter(w, zstd.WithEncoderLevel(zstd.SpeedDefault))
}

// compressTo writes archive to c compressed, closes c's sending side and
// returns the compressed bytes sent.
func compressTo(c net.Conn, archive io.Reader) (int64, error) {
	cw := &counter{w: c}
	zw, err := newShipperEncoder(cw)
	if err == nil {
		_, err = io.Copy(zw, archive)
		err = errors.Join(err, zw.Close())
	}
	if tc, ok := c.(*net.TCPConn); ok && err == nil {
		err = tc.CloseWrite()
	} else {
		c.Close()
	}
	return cw.n, err
}

type counter struct {
	w io.Writer
	n int64
}

func (c *counter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// shipped is the archive as the subscriber's site reads it.
type shipped struct {
	in   net.Conn
	dec  *zstd.Decoder
	sent chan error
	stop func() bool
	once sync.Once
	err  error
}

func (r *shipped) Read(p []byte) (int, error) {
	n, err := r.dec.Read(p)
	if err == io.EOF {
		// The end of the stream: the sender must have finished well.
		if serr := r.wait(); serr != nil {
			return n, fmt.Errorf("ship the archive: %w", serr)
		}
	}
	return n, err
}

func (r *shipped) wait() error {
	r.once.Do(func() { r.err = <-r.sent })
	return r.err
}

// Close ends the carrying and waits for the sender.
func (r *shipped) Close() error {
	if r.stop != nil {
		r.stop()
	}
	if r.dec != nil {
		r.dec.Close()
	}
	r.in.Close()
	err := r.wait()
	if errors.Is(err, net.ErrClosed) {
		err = nil // closed by us, after the restore read what it needed
	}
	return err
}

var _ replication.Carrier = (*shipper)(nil).carry
