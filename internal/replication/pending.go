package replication

// pending is a session being opened in the background while setup goes
// on with other work: from the other site each session's handshake costs
// round trips across the WAN that setup need not wait for one after the
// other. Its goroutine ends when open returns (open honours setup's
// context); whoever started it calls release on every path, which waits
// for it and closes a session nobody took.
type pending[T any] struct {
	done    chan struct{}
	v       T
	err     error
	taken   bool
	closeFn func(T)
}

// openInBackground starts open; closeFn ends what it opened.
func openInBackground[T any](open func() (T, error), closeFn func(T)) *pending[T] {
	p := &pending[T]{done: make(chan struct{}), closeFn: closeFn}
	go func() { // waited for by take and release
		defer close(p.done)
		p.v, p.err = open()
	}()
	return p
}

// opened is a pending session that is open already.
func opened[T any](v T, closeFn func(T)) *pending[T] {
	p := &pending[T]{done: make(chan struct{}), v: v, closeFn: closeFn}
	close(p.done)
	return p
}

// take waits for the session; from then on the caller owns it (or its
// error).
func (p *pending[T]) take() (T, error) {
	<-p.done
	p.taken = true
	return p.v, p.err
}

// release waits for the open to end and closes a session nobody took.
func (p *pending[T]) release() {
	if p == nil {
		return
	}
	<-p.done
	if !p.taken && p.err == nil {
		p.closeFn(p.v)
	}
}
