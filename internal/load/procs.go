package load

import (
	"os"
	"runtime"
)

// reserveProcs raises GOMAXPROCS for a run of users virtual users so that a
// P stays idle while every user waits for its server, and returns what puts
// the old value back.
//
// A user waits in a blocking system call (blockconn's sockets, as a C
// client's recv). While no P is idle, the runtime's sysmon takes a waiting
// call's P away after 20 µs and hands it on, and the call's return must find
// a P again: on a 2-CPU machine with 2 users that took the client from 7.2 to
// 9.6 µs of CPU per transaction and from 115,000 to 81,000 point selects a
// second (dbrig load oltp --mix point-select --users 2, perf stat). With a P
// idle, sysmon leaves the calls alone. With more than twice as many users as
// CPUs the extra Ps cost more than they save (at 8 users on 2 CPUs, 14.2
// against 8.4 µs per transaction, idle Ps' threads spinning for work), so
// the runtime's default stays. A GOMAXPROCS the user (or a study's client
// constraint) set is kept as it is.
func reserveProcs(users int) (restore func()) {
	cpus := runtime.NumCPU()
	if os.Getenv("GOMAXPROCS") != "" || users > 2*cpus {
		return func() {}
	}
	want := users + cpus
	prev := runtime.GOMAXPROCS(0)
	if want <= prev {
		return func() {}
	}
	runtime.GOMAXPROCS(want)
	return func() { runtime.GOMAXPROCS(prev) }
}
