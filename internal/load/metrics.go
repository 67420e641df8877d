package load

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// The live view for Prometheus. It is for dashboards: counters and a latency
// histogram since the start of the run (warm-up included, so rate() works
// across the phases), the last second's percentiles, and gauges. The results
// are the Result's, computed from the full distributions. Nothing here is on
// the hot path: the collector publishes a copy once per second.

// promBounds are the latency histogram's bucket bounds in seconds.
var promBounds = []float64{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
	0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}

// promBoundsMicros are promBounds in the histograms' unit.
var promBoundsMicros = func() []int64 {
	b := make([]int64, len(promBounds))
	for i, s := range promBounds {
		b[i] = int64(s * 1e6)
	}
	return b
}()

// liveType is one transaction type since the start of the run.
type liveType struct {
	ok, overLimit int64
	errors        ErrorCounts
	buckets       []uint64 // per bound, not cumulative; above the last only in count
	count         uint64
	sumNs         int64
	p50, p99, max time.Duration // of the last second
}

func newLiveTypes(n int) []liveType {
	l := make([]liveType, n)
	for i := range l {
		l[i].buckets = make([]uint64, len(promBounds))
	}
	return l
}

func (l *liveType) add(t *typeBuffer) {
	l.ok += t.ok
	l.overLimit += t.overLimit
	l.errors.add(&t.errors)
	l.count += uint64(t.ok)
	l.sumNs += t.latencySum
	for value, count := range t.latency.ForEachBucket {
		for i, bound := range promBoundsMicros {
			if value <= bound {
				l.buckets[i] += uint64(count)
				break
			}
		}
	}
}

// live is the copy Prometheus reads.
type live struct {
	mu         sync.Mutex
	types      []liveType
	phase      Phase
	late       int64
	notStarted int64
}

func (l *live) init(mix []TxType) { l.types = newLiveTypes(len(mix)) }

func (l *live) publish(c *collector, iv *Interval) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := range l.types {
		dst, src := &l.types[i], &c.live[i]
		prev50, prev99, prevMax := dst.p50, dst.p99, dst.max
		b := dst.buckets
		*dst = *src
		dst.buckets = b
		copy(dst.buckets, src.buckets)
		dst.p50, dst.p99, dst.max = prev50, prev99, prevMax
		if iv.Length == tick { // not a fraction of a second cut by a phase's end
			dst.p50, dst.p99, dst.max = iv.Types[i].P50, iv.Types[i].P99, iv.Types[i].Max
		}
	}
	l.phase = c.phase
	l.late += iv.Late
	l.notStarted += iv.NotStarted
}

// Metrics returns a Prometheus collector of the runner's live run. Register
// it before Run (or serve it with [ServeMetrics]); it reports zeros until the
// first second is over.
func (r *Runner) Metrics() prometheus.Collector { return &metrics{r: r} }

type metrics struct{ r *Runner }

var (
	descOps = prometheus.NewDesc("dbrig_load_operations_total",
		"Operations that succeeded, by transaction type, since the start of the run (warm-up included).", []string{"type"}, nil)
	descErrors = prometheus.NewDesc("dbrig_load_errors_total",
		"Operations that failed, by transaction type and error class.", []string{"type", "class"}, nil)
	descOverLimit = prometheus.NewDesc("dbrig_load_over_limit_total",
		"Operations slower than the transaction limit, by transaction type.", []string{"type"}, nil)
	descLatency = prometheus.NewDesc("dbrig_load_latency_seconds",
		"Latency of successful operations from their intended start, by transaction type.", []string{"type"}, nil)
	descLastSecond = prometheus.NewDesc("dbrig_load_last_second_latency_seconds",
		"Latency percentile over the last complete second, by transaction type (quantile 1 is the maximum).", []string{"type", "quantile"}, nil)
	descInFlight = prometheus.NewDesc("dbrig_load_in_flight",
		"Open loop: operations that arrived and have not finished (running or waiting for a worker).", nil, nil)
	descUsers = prometheus.NewDesc("dbrig_load_users",
		"Virtual users started (closed loop) or workers (open loop).", nil, nil)
	descLate = prometheus.NewDesc("dbrig_load_late_total",
		"Operations that started later than the late-after threshold behind their schedule.", nil, nil)
	descNotStarted = prometheus.NewDesc("dbrig_load_not_started_total",
		"Open loop: arrivals over the in-flight bound, not started (the driver was overloaded).", nil, nil)
	descPhase = prometheus.NewDesc("dbrig_load_phase",
		"1 for the run's current phase.", []string{"phase"}, nil)
)

func (m *metrics) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descOps, descErrors, descOverLimit, descLatency, descLastSecond,
		descInFlight, descUsers, descLate, descNotStarted, descPhase} {
		ch <- d
	}
}

func (m *metrics) Collect(ch chan<- prometheus.Metric) {
	l := &m.r.live
	l.mu.Lock()
	defer l.mu.Unlock()
	for i, t := range l.types {
		name := m.r.mix[i].Name
		ch <- prometheus.MustNewConstMetric(descOps, prometheus.CounterValue, float64(t.ok), name)
		for _, class := range ErrorClasses() {
			ch <- prometheus.MustNewConstMetric(descErrors, prometheus.CounterValue, float64(t.errors[class]), name, class.String())
		}
		ch <- prometheus.MustNewConstMetric(descOverLimit, prometheus.CounterValue, float64(t.overLimit), name)
		cumulative := make(map[float64]uint64, len(promBounds))
		var running uint64
		for j, bound := range promBounds {
			running += t.buckets[j]
			cumulative[bound] = running
		}
		ch <- prometheus.MustNewConstHistogram(descLatency, t.count, float64(t.sumNs)/1e9, cumulative, name)
		for _, q := range []struct {
			label string
			value time.Duration
		}{{"0.5", t.p50}, {"0.99", t.p99}, {"1", t.max}} {
			ch <- prometheus.MustNewConstMetric(descLastSecond, prometheus.GaugeValue, q.value.Seconds(), name, q.label)
		}
	}
	ch <- prometheus.MustNewConstMetric(descInFlight, prometheus.GaugeValue, float64(m.r.inFlight.Load()))
	ch <- prometheus.MustNewConstMetric(descUsers, prometheus.GaugeValue, float64(m.r.usersStarted.Load()))
	ch <- prometheus.MustNewConstMetric(descLate, prometheus.CounterValue, float64(l.late))
	ch <- prometheus.MustNewConstMetric(descNotStarted, prometheus.CounterValue, float64(l.notStarted))
	for i, name := range phaseNames {
		v := 0.0
		if Phase(i) == l.phase {
			v = 1
		}
		ch <- prometheus.MustNewConstMetric(descPhase, prometheus.GaugeValue, v, name)
	}
}

// MetricsServer serves Prometheus metrics over HTTP until its context ends.
type MetricsServer struct {
	addr net.Addr
	done chan struct{}
	err  error
}

// ServeMetrics serves the collectors in Prometheus text format at
// http://ADDR/metrics until ctx is done. addr is HOST:PORT; an empty HOST
// means 127.0.0.1 (say 0.0.0.0 to serve other machines), port 0 any free
// port ([MetricsServer.Addr] tells which). It returns once it listens, so a
// bad address is an error here, not later.
func ServeMetrics(ctx context.Context, addr string, collectors ...prometheus.Collector) (*MetricsServer, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("metrics address %q: want HOST:PORT: %w", addr, err)
	}
	if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		return nil, fmt.Errorf("metrics address %q: port %q is not a number from 0 to 65535", addr, port)
	}
	if host == "" {
		host = "127.0.0.1"
	}
	reg := prometheus.NewRegistry()
	for _, c := range collectors {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register metrics: %w", err)
		}
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(host, port))
	if err != nil {
		return nil, fmt.Errorf("serve metrics on %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	s := &MetricsServer{addr: ln.Addr(), done: make(chan struct{})}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }() // ends when srv shuts down
	go func() {                             // ends when ctx is done or the server fails
		defer close(s.done)
		select {
		case <-ctx.Done():
			shutdown, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			if err := srv.Shutdown(shutdown); err != nil {
				s.err = fmt.Errorf("stop metrics server: %w", err)
			}
			if err := <-served; !errors.Is(err, http.ErrServerClosed) {
				s.err = errors.Join(s.err, err)
			}
		case err := <-served:
			s.err = fmt.Errorf("metrics server on %s: %w", s.addr, err)
		}
	}()
	return s, nil
}

// Addr is the address the server listens on.
func (s *MetricsServer) Addr() net.Addr { return s.addr }

// Wait blocks until the server has stopped and returns why, if not because
// its context ended.
func (s *MetricsServer) Wait() error {
	<-s.done
	return s.err
}
