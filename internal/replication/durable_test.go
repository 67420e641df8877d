package replication

import "testing"

func TestDurabilityConfirmsOnlyFlushedCommits(t *testing.T) {
	t.Parallel()
	var d durability
	d.restart(commitPoint{cmd: 10, local: 100})
	if d.known || !d.waiting() {
		t.Fatalf("after connecting: known %v, waiting %v; want the record unconfirmed", d.known, d.waiting())
	}
	d.flushedTo(99)
	if d.known {
		t.Fatal("a flush before the record's insert position confirmed it")
	}
	d.acknowledged(commitPoint{cmd: 20, local: 200})
	d.acknowledged(commitPoint{cmd: 30, local: 300})
	d.flushedTo(250)
	if !d.known || d.durable.cmd != 20 || !d.waiting() {
		t.Fatalf("flushed to 250: durable %d (known %v), waiting %v; want 20, 30 still waiting", d.durable.cmd, d.known, d.waiting())
	}
	d.flushedTo(100) // an older answer moves nothing back
	if d.durable.cmd != 20 {
		t.Fatalf("an older flush position moved the durable position to %d", d.durable.cmd)
	}
	d.flushedAll()
	if d.durable.cmd != 30 || d.waiting() {
		t.Fatalf("after a synchronous commit: durable %d, waiting %v; want 30, nothing waiting", d.durable.cmd, d.waiting())
	}
	d.restart(commitPoint{cmd: 25, local: 400}) // the subscriber recovered less
	if d.known {
		t.Fatal("a reconnect kept the old run's durable position as known")
	}
	d.flushedTo(400)
	if d.durable.cmd != 25 {
		t.Fatalf("after the reconnect: durable %d, want the subscriber's record 25", d.durable.cmd)
	}
}
