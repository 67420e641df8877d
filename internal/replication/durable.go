package replication

// durability holds the commits the subscriber has acknowledged until they
// are durable there. With synchronous_commit off (a common setting for a
// replica) a commit returns before its WAL is written, and a crash of the
// subscriber loses it; had the agent reported it, the log reader's cleanup
// would delete commands nothing can apply again. So the agent reports, and
// cleanup deletes up to, only commits whose WAL the subscriber has flushed,
// as PostgreSQL's own apply worker confirms to its publisher only local
// commits it has flushed.
//
// Each commit is booked with the subscriber's WAL insert position read in
// the same round trip just after it, which lies at or past the end of its
// commit record. It is durable once the subscriber's flush position, read
// in later round trips, reaches that position, or once a synchronous
// commit that the same session made after it has returned (the probe an
// idle agent sends: the insert position read just after a commit may lie
// past a page header no later WAL fills while the subscriber is idle).
type durability struct {
	unflushed []commitPoint // acknowledged, not yet known durable, in commit order
	durable   commitPoint   // the last commit known durable
	known     bool          // durable holds a commit known durable in this run
}

// restart forgets what an earlier connection knew: at is the subscriber's
// own record, read on connecting, with the WAL insert position read with
// it; whether that record is durable yet is unknown.
func (d *durability) restart(at commitPoint) {
	d.unflushed = append(d.unflushed[:0], at)
	d.known = false
}

// acknowledged books a commit the subscriber has answered.
func (d *durability) acknowledged(c commitPoint) { d.unflushed = append(d.unflushed, c) }

// flushedTo confirms the commits whose WAL lies before the subscriber's
// flush position.
func (d *durability) flushedTo(flush LSN) {
	n := 0
	for n < len(d.unflushed) && d.unflushed[n].local <= flush {
		n++
	}
	d.confirm(n)
}

// flushedAll confirms every commit booked: a synchronous commit made after
// them has returned.
func (d *durability) flushedAll() { d.confirm(len(d.unflushed)) }

func (d *durability) confirm(n int) {
	if n == 0 {
		return
	}
	d.durable, d.known = d.unflushed[n-1], true
	d.unflushed = append(d.unflushed[:0], d.unflushed[n:]...)
}

// waiting reports commits acknowledged and not yet known durable.
func (d *durability) waiting() bool { return len(d.unflushed) > 0 }
