package load

import (
	"os"
	"runtime"
)

// maxDedicatedUsers is the most users a run gives threads of their own
// (an OS thread each is what pgbench -j and sysbench give their clients):
// measured up to 190 users on 2 CPUs (below); a thousand users that mostly
// think, each on its thread, wake a thread for every think time, where the
// runtime's shared threads take turns (the hour of 1,000 users on the fake
// clock in memory_test.go took 63 s instead of 3.6). A machine with more
// than 64 CPUs keeps the earlier bound, four users a CPU, and so do users
// who pause between their transactions (think or keying time): asleep
// most of their cycle, they seldom wait for a shared thread, and a thread
// each costs a thread's wake-up for every pause. Consolidation's 100 users
// with 18 ms of think time, each on its thread, took 0.45 CPUs of client
// (94 µs a transaction) against 0.20 (48 µs), and their figures spread
// more from run to run: the two quick runs' own repeat a p90 of 31 and 42 %
// against 22 % for three runs on shared threads (runs/consolidation-
// 20261128-s11t and -s11u against the three before).
const maxDedicatedUsers = 256

// reserveProcs prepares the runtime for a run of users virtual users that
// each wait for their server in a blocking system call (blockconn's
// sockets, as a C client's recv). With at most maxDedicatedUsers users (or
// four a CPU, where that is more; four a CPU for users who pause between
// their transactions) it raises GOMAXPROCS to users + CPUs, so
// that a P stays idle while every user waits, and says that each
// closed-loop user should keep an OS thread of its own (dedicated);
// restore puts the old GOMAXPROCS back.
//
// While no P is idle, the runtime's sysmon takes a waiting call's P away
// after 20 µs and hands it on, and the call's return must find a P again: on
// a 2-CPU machine with 2 users that took the client from 7.2 to 9.6 µs of
// CPU per transaction and from 115,000 to 81,000 point selects a second
// (dbrig load oltp --mix point-select --users 2, perf stat). A user locked
// to its thread then gained a little more: 129,000 against 121,000 a
// second at 2 users (medians of 9 alternating rounds of 6 s, pgbench -S -c 2
// 138,000 in the same rounds) and 107,000 against 91,000 at 4 users (4
// rounds).
//
// The bound was twice, then four times as many users as CPUs; beyond it
// the users shared the runtime's default Ps, and a user whose answer had
// come waited for one between its transactions, a wait its response time
// leaves out: point-select through a unix socket at 16 to 190 users on 2
// CPUs (dbrig load oltp, alternating rounds, load average 26 to 40) went
// at 16, 32, 64 and 128 users from 42,420, 35,679, 24,546 and 18,029
// transactions a second to 62,005, 49,911, 41,923 and 27,773 with a thread
// each (a second round 40,827, 33,176, 21,457, 13,888 to 55,768, 52,980,
// 44,227, 32,599), at 190 from 15,896 to 29,338; and the mean response at
// 16 users was 0.05 ms for a cycle N / X of 0.38 ms, where with a thread
// each it is 0.26 ms for 0.26 ms (Little's law holds again). A GOMAXPROCS
// the user (or a study's client constraint) set is kept as it is.
func reserveProcs(users int, pause bool) (dedicated bool, restore func()) {
	cpus := runtime.NumCPU()
	bound := max(maxDedicatedUsers, 4*cpus)
	if pause {
		bound = 4 * cpus
	}
	if os.Getenv("GOMAXPROCS") != "" || users > bound {
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
