package load

import (
	"os"
	"runtime"
)

// reserveProcs prepares the runtime for a run of users virtual users that
// each wait for their server in a blocking system call (blockconn's
// sockets, as a C client's recv). With at most four times as many users as
// CPUs it raises GOMAXPROCS to users + CPUs, so that a P stays idle while every
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
// rounds). The bound was twice as many users as CPUs while sysmon, polling
// every 20 µs (see yieldEvery), made the extra Ps' threads spin; with the
// users yielding, 6 and 8 users on 2 CPUs gained too (select-only under the
// script runner, medians of 3 alternating rounds at load average 28: 8
// users 17,345 -> 27,286 a second and 20.5 -> 17.6 µs of CPU a
// transaction, 6 users 13,262 -> 21,738 and 26.8 -> 15.0 µs). With more
// users than that the runtime's defaults stay. A GOMAXPROCS the user (or a
// study's client constraint) set is kept as it is.
func reserveProcs(users int) (dedicated bool, restore func()) {
	cpus := runtime.NumCPU()
	if os.Getenv("GOMAXPROCS") != "" || users > 4*cpus {
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
