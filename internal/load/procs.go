package load

import (
	"os"
	"runtime"

	"github.com/dbrig/dbrig/internal/spareproc"
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
// their transactions) it says that each closed-loop user should keep an OS
// thread of its own (dedicated) and raises GOMAXPROCS to one P a user, plus
// one spare P a CPU where something else in the process must run promptly
// while every user waits: users who pause (their think or keying time is a
// Go timer), the dispatcher of an open loop that hands every arrival to a
// user (handOff), or an emulated link relaying the users' round trips
// (spareproc). restore puts the old GOMAXPROCS back.
//
// Users who claim their arrivals ahead need no spare: each waits for its
// arrival on its own thread, and their dispatcher only queues an arrival
// that falls due while every user is busy, which the first user to finish
// would claim anyway, from its intended start. At 2,000 arrivals a second
// from 4 users (dbrig load script select-only -M prepared --rate 2000
// beside pgbench -S -M prepared -c 4 -j 4 -R 2000, perf stat of each
// client over 4 s, two alternating rounds, 2026-11-28 11:45 UTC, load
// average about 1) the spare Ps cost 47.5-48.3 µs of client CPU, 2.5
// context switches and 0.67 futex calls an arrival, against 35.5-41.9,
// 2.06 and 0.008 without (pgbench 32.8-34.6 µs and 1.6-1.9 switches),
// with the same latencies (p50 104-121 against 103-118 µs).
//
// The spare Ps are not free. A user yields every 5 ms (yieldEvery), and a
// yield with an idle P wakes an idle thread to look for work (the
// runtime's wakep), which finds none and sleeps again: at 8 users of
// select-only on 2 CPUs, 0.056-0.060 futex calls and 1.05-1.06 context
// switches a transaction, against 0.000-0.005 and 1.01-1.03 without the
// spare Ps (pgbench -c 8 -j 8: 0 and 1.00), and 14.5-15.1 against
// 12.4-12.8 µs of the client's CPU a transaction in two of three
// alternating rounds (13.1 against 13.2 in the third; pgbench 10.0-11.0;
// perf stat of the client over 4 s, 2026-11-28, load average 5 to 7).
// A minimal Go client of the same exchange (raw write, ppoll and read on
// locked threads) spent 11.2-12.4 µs with the spare Ps and 9.7-10.8
// without, pgbench 9.6-10.5 in the same rounds (four of each).
//
// Without a spare P and without the yield, the runtime's sysmon takes a
// waiting call's P away, and the call's return must find a P again: on a
// 2-CPU machine with 2 users that took the client from 7.2 to 9.6 µs of
// CPU per transaction and from 115,000 to 81,000 point selects a second
// (dbrig load oltp --mix point-select --users 2, perf stat, before users
// yielded). A user locked to its thread then gained a little more: 129,000
// against 121,000 a second at 2 users (medians of 9 alternating rounds of
// 6 s, pgbench -S -c 2 138,000 in the same rounds) and 107,000 against
// 91,000 at 4 users (4 rounds).
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
func reserveProcs(users int, pause, handOff bool) (dedicated bool, restore func()) {
	cpus := runtime.NumCPU()
	bound := max(maxDedicatedUsers, 4*cpus)
	if pause {
		bound = 4 * cpus
	}
	if os.Getenv("GOMAXPROCS") != "" || users > bound {
		return false, func() {}
	}
	prev := runtime.GOMAXPROCS(0)
	want := users
	if pause || handOff || spareproc.Held() {
		want += cpus
	}
	if want <= prev {
		return true, func() {}
	}
	runtime.GOMAXPROCS(want)
	return true, func() { runtime.GOMAXPROCS(prev) }
}
