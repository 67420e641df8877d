package load

import (
	"os"
	"runtime"
)

// reserveProcs prepares the runtime for a run of users virtual users that
// each wait for their server in a blocking system call (blockconn's
// sockets, as a C client's recv). With at most twice as many users as CPUs
// it raises GOMAXPROCS to users + CPUs, so that a P stays idle while every
// user waits, and says that each closed-loop user should keep an OS thread
// of its own (dedicated); restore puts the old GOMAXPROCS back.
//
// While no P is idle, the runtime's sysmon takes a waiting call's P away
// after 20 µs and hands it on, and the call's return must find a P again: on
// a 2-CPU machine with 2 users that took the client from 7.2 to 9.6 µs of
// CPU per transaction and from 115,000 to 81,000 point selects a second
// (dbrig load oltp --mix point-select --users 2, perf stat). A user locked
// to its thread then gained a little more: 129,000 against 121,000 a
// second at 2 users (medians of 9 alternating rounds of 6 s, pgbench -S -c 2
// 138,000 in the same rounds) and 107,000 against 91,000 at 4 users (4
// rounds). With more users than that, extra Ps cost more than they save (8
// users at GOMAXPROCS 10: 14.2 against 8.4 µs per transaction, idle Ps'
// threads spinning for work) and locked threads gained nothing (3 rounds at
// 8 users), so the runtime's defaults stay. A GOMAXPROCS the user (or a
// study's client constraint) set is kept as it is.
func reserveProcs(users int) (dedicated bool, restore func()) {
	cpus := runtime.NumCPU()
	if os.Getenv("GOMAXPROCS") != "" || users > 2*cpus {
		return false, func() {}
	}
	prev := runtime.GOMAXPROCS(0)
	want := users + cpus
	if want <= prev {
		return true, func() {}
	}
	runtime.GOMAXPROCS(want)
	return true, func() { runtime.GOMAXPROCS(prev) }
}
