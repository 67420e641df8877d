// Package link emulates a network link in user space: a TCP proxy that puts
// every byte through a physical model in each direction, because the hosts
// dbrig runs on have no netem. The model is described for network engineers
// in docs/link.md; in short, per direction:
//
//   - what a reader takes from a socket is cut into MSS-sized segments,
//     stamped with their arrival time (the kernel's receive timestamp);
//   - a serializer puts each segment on the wire at max(arrival, wire free)
//     for (len+overhead)·8/rate seconds, never crediting idle time; with
//     [HalfDuplex] both directions share one wire, and all connections of a
//     link always share it;
//   - a segment is delivered one one-way delay plus bounded jitter after it
//     leaves the wire, never before the segment ahead of it;
//   - at most the window is in flight per direction of a connection; a
//     segment's window credit returns one reverse one-way delay after its
//     delivery, and while the window is full the proxy stops reading, so
//     the sender is held back as by a real TCP window;
//   - a lost segment (Bernoulli, or a late collision with [Mismatch] duplex)
//     holds itself and everything behind it for a retransmission timeout
//     that doubles when the retransmission is lost too; no byte is dropped.
//
// [Listen] starts a link as a [Proxy] between a local listener and an
// upstream server (TCP or a unix socket); [Proxy.Stats] reports what it
// carried, per direction and over all connections, including a time series
// of delivered bytes. [Config] holds the physics, [ParseProfile] builds one
// from named profiles such as "tukwila-dublin+legacy-window". [Params] is
// the table of its settings, each with its parser, bound and doc line, that
// the profiles, a study file's [[link]] table ([Override]) and every
// command's flags ([AddFlags]) read alike.
//
// Time is behind a small clock interface: each direction has one scheduler
// goroutine working to absolute deadlines, which the tests run exactly on
// testing/synctest's fake clock, and which on the wall clock sleeps on a
// timerfd and spins briefly before a deadline that ends a message. A link
// with no impairment skips the model and only copies and counts.
//
// A listening link holds a spare P (internal/spareproc) until it closes:
// its goroutines carry the round trips of a load's users in the same
// process, who otherwise get a P each and no more, so they must not wait
// for one of those users to pass through the scheduler.
package link
