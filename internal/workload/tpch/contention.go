package tpch

// contention is the other work a point runs beside: m runnable threads on
// the server's C CPUs. The scheduler gives every runnable thread an equal
// share, so each of k server processes gets φ(k) = min(1, C / (m + k)) of
// a CPU.
type contention struct {
	cpus    float64 // C; 0 when unknown (a target's host): no contention
	threads float64 // m
}

// minShare keeps a point whose other work took every CPU from dividing by
// zero: the server still got a scheduler's slice.
const minShare = 0.02

// share is φ(k), the CPU each of k processes gets.
func (c contention) share(k float64) float64 {
	if c.cpus <= 0 {
		return 1
	}
	return min(1, c.cpus/(c.threads+k))
}

// factor is the time a unit of work takes at serial fraction s on n
// processes, each at its share: s / φ(1) + (1 − s) / (n × φ(n)).
func (c contention) factor(s, n float64) float64 {
	return s/c.share(1) + (1-s)/(n*c.share(n))
}

// shareOf is the share one process got where free CPUs went to busy
// processes: at most a CPU each.
func shareOf(free, busy float64) float64 {
	return min(1, max(free/max(busy, 1), minShare))
}
