package load

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/dbrig/dbrig/internal/workload"
)

// ClientLimitedWarning is the warning a point gets when the load generator,
// not the server, limited it (see [Result.Client]).
const ClientLimitedWarning = "the load generator, not the server, limited this point"

// clientLimitedShare is the busy share from which the client is said to
// limit a point: a user that is busy 90 % of the time leaves the server
// idle between its requests for at most a tenth of it.
const clientLimitedShare = 0.9

// cpuReading is this process's CPU time (every thread's user and system
// time, from getrusage) and the time its threads waited on a run queue for
// a CPU (the second field of each thread's /proc schedstat), at one moment.
type cpuReading struct {
	at      time.Time
	cpu     time.Duration
	waiting time.Duration
	ok      bool
}

func readCPU() cpuReading {
	r := cpuReading{at: time.Now()}
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return r
	}
	r.cpu = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	r.waiting = runQueueWait() // 0 where the system does not say
	r.ok = true
	return r
}

// runQueueWait sums the time each of this process's threads waited for a
// CPU. Beside a real CPU share it counts as the client's demand too: on a
// machine whose CPUs are shared, a client that is always running or ready
// to run is what limits the point (see clientMinCPUShare).
func runQueueWait() time.Duration {
	tasks, _ := filepath.Glob("/proc/self/task/*/schedstat")
	var sum time.Duration
	for _, t := range tasks {
		b, err := os.ReadFile(t)
		if err != nil {
			continue // a thread that ended between the listing and the read
		}
		if f := bytes.Fields(b); len(f) >= 2 {
			ns, _ := strconv.ParseInt(string(f[1]), 10, 64)
			sum += time.Duration(ns)
		}
	}
	return sum
}

// ClientLoad is what the load generator's own process took over a
// measured interval: its CPU time, the time its threads waited for a CPU,
// and the CPUs it could use at most (the run's GOMAXPROCS as the process
// started it, which follows its CPU affinity and CPU quota, and no more
// than one per user thread).
type ClientLoad struct {
	CPU      time.Duration `json:"cpu_ns"`
	Waiting  time.Duration `json:"run_queue_ns"`
	Interval time.Duration `json:"interval_ns"`
	Cores    int           `json:"cores"`
	// UserThreads is the users' threads of their own when they had them
	// (reserveProcs), 0 when they shared the runtime's.
	UserThreads int `json:"user_threads,omitempty"`
}

// clientLoad is the load between two readings of a run that could use
// cores, its users on userThreads threads of their own (0: shared).
func clientLoad(from, to cpuReading, cores, userThreads int) *ClientLoad {
	if !from.ok || !to.ok || cores < 1 || !to.at.After(from.at) {
		return nil
	}
	return &ClientLoad{CPU: to.cpu - from.cpu, Waiting: max(to.waiting-from.waiting, 0),
		Interval: to.at.Sub(from.at), Cores: cores, UserThreads: userThreads}
}

// BusyShare is the share of what it could use that the client was
// running or ready to run: 1 is every core it may use, all the time. Where
// its users had threads of their own, each waits for a CPU on its own
// (the server's processes and the others' on the same CPUs), so the wait
// is a share of their threads' time, not of the cores: 190 users each on
// its thread, sleeping on a saturated server, waited 43 times the interval
// summed over their threads, 23 % of each one's time.
func (c *ClientLoad) BusyShare() float64 {
	waiting := float64(c.Waiting) / (float64(c.Interval) * float64(max(c.Cores, c.UserThreads)))
	return c.CPUShare() + waiting
}

// CPUShare is the share of what it could use that the client ran.
func (c *ClientLoad) CPUShare() float64 {
	return float64(c.CPU) / (float64(c.Interval) * float64(c.Cores))
}

// clientMinCPUShare is the least CPU share with which waiting for a CPU
// counts as the client's own demand. The run-queue wait is every thread's,
// the runtime's too: on a machine another process keeps busy (a saturated
// server on the same cores), a client whose users sleep on the server
// still waits whenever a thread wakes, and summed over its threads that
// wait passes the interval (a sleeping user at load 40: CPU 4 %, waiting
// 119 %). It is not the load generator that limits such a point.
const clientMinCPUShare = 0.25

// Limited reports whether the client, not the server, limited the point:
// it ran on what it may use 90 % of the time, or ran a quarter of it and
// was ready to run the rest.
func (c *ClientLoad) Limited() bool {
	cpu := c.CPUShare()
	return cpu >= clientLimitedShare || cpu >= clientMinCPUShare && c.BusyShare() >= clientLimitedShare
}

// ClientMetricSpecs are the metrics [ClientMetrics] adds: every workload
// on the layer declares them.
func ClientMetricSpecs() []workload.MetricSpec {
	return []workload.MetricSpec{
		{Name: "client_cpu_us_per_tx", Unit: workload.Microseconds, Better: workload.Lower,
			Doc: "the load generator's own CPU time (its process's, user and system) per transaction ended in the measured interval"},
		{Name: "client_cpu_pct", Unit: workload.Percent, Better: workload.Lower,
			Doc: "the share of the CPUs the load generator may use (its GOMAXPROCS, at most one per user) that its process used"},
		{Name: "client_busy_pct", Unit: workload.Percent, Better: workload.Lower,
			Doc: "the share of the CPUs the load generator may use (its GOMAXPROCS, at most one per user) that it was running, plus its wait for a CPU: where its users had threads of their own, the share of their threads' time they waited, else the wait summed over its threads as a share of those CPUs; at 90 % and above, with a CPU share of 25 % or more, the client, not the server, limited the point"},
	}
}

// ClientMetrics adds the client's figures to a point's metrics and, when
// it limited the point, returns the warning that says so; nothing when
// the run did not read them (a load spread over agents).
func ClientMetrics(res *Result, metrics map[string]float64) (warning string) {
	c := res.Client
	if c == nil {
		return ""
	}
	if ended := res.Overall.Ops + res.Overall.Errors.Total(); ended > 0 {
		metrics["client_cpu_us_per_tx"] = float64(c.CPU) / float64(time.Microsecond) / float64(ended)
	}
	cpuShare := c.CPUShare()
	metrics["client_cpu_pct"] = 100 * cpuShare
	share := c.BusyShare()
	metrics["client_busy_pct"] = 100 * share
	if !c.Limited() {
		return ""
	}
	waited := fmt.Sprintf("waited for one another %.0f %% of the time", 100*(share-cpuShare))
	if c.UserThreads > c.Cores {
		waited = fmt.Sprintf("its users' %d threads waited for a CPU %.0f %% of their time", c.UserThreads, 100*(share-cpuShare))
	}
	return fmt.Sprintf("%s: its process used %.0f %% of the %d CPU%s it may use (one per user, at most its GOMAXPROCS) and %s: the figures measure the client",
		ClientLimitedWarning, 100*cpuShare, c.Cores, plural(c.Cores), waited)
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
