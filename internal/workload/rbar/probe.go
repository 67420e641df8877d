package rbar

import (
	"errors"
	"fmt"
	"time"

	"github.com/dbrig/dbrig/internal/engine"
	"github.com/dbrig/dbrig/internal/idleloop"
	"github.com/dbrig/dbrig/internal/workload"
)

// The samples a server-loop point takes of the other experiments on the
// unix socket and direct TCP, after its round-trip probe and before its
// statement: each experiment's first point on either transport has no
// earlier point of its own experiment there, and the other transport's
// consumer rate misses it by up to 2.75x (cursor-messages on the unix socket fitted from
// direct TCP, the quick run of 2026-11-27). The server-loop points run
// first on every path, in the same process placement as every later
// point, so their samples are measured before the points they predict,
// never by them. Through the emulated link a point takes the fastest
// other link's figures, measured as long as its own.
//
// Each sample is one statement of SampleRows[exp] rows of the experiment,
// timed from the request to the last row, less one round trip, taken
// before the point's own statement: on a fresh session, as the stream
// points that it predicts start theirs, not after hundreds of
// milliseconds of one backend on a CPU and the round-trip probe (taken
// so, in a run at load average 7 to 9, the samples of notices on direct
// TCP took 13 to 27 µs a row against the points' 5 to 8). Sizes keep each
// to tens of milliseconds on PostgreSQL at the rates of this machine.
var SampleRows = map[string]int64{
	"server-cursor":   100_000,
	"client-stream":   500_000,
	"cursor-messages": 10_000,
	"wide-rows":       2_000,
}

// sampledExps are the experiments sampled, in the order they run (a map's
// is random).
var sampledExps = []string{"server-cursor", "client-stream", "cursor-messages", "wide-rows"}

// SampleMetric names a sample's figure: its time per row (µs) or, for a
// stream, the protocol bytes per row.
func SampleMetric(exp, what string) string { return "sample_" + exp + "_" + what }

// sampleMetrics declares the samples' figures.
func sampleMetrics() []workload.MetricSpec {
	var out []workload.MetricSpec
	for _, exp := range sampledExps {
		out = append(out, workload.MetricSpec{Name: SampleMetric(exp, "us_per_row"), Unit: workload.Microseconds, Better: workload.Lower,
			Doc: "a short sample of " + exp + " on the path, before a server-loop point's statement, less a round trip: predicts the " + exp + " points that run after it"})
		if exp != "server-cursor" {
			out = append(out, workload.MetricSpec{Name: SampleMetric(exp, "bytes_per_row"), Unit: workload.Bytes,
				Doc: "protocol bytes per row of the " + exp + " sample"})
		}
	}
	return out
}

// sampler runs one sample of an experiment: n rows, the wire bytes it
// received (0 for server-side work).
type sampler func(exp string, n int64) (wire int64, err error)

// takeSamples runs every experiment's sample on a path that bypasses the
// link (transport "unix" or "tcp") and returns their figures; trip makes
// one round trip, which each sample's time leaves out.
func takeSamples(transport string, trip func() error, run sampler) (map[string]float64, error) {
	out := map[string]float64{}
	if transport == "link" {
		return out, nil
	}
	start := time.Now()
	if err := trip(); err != nil {
		return nil, fmt.Errorf("round trip before the samples: %w", err)
	}
	rt := time.Since(start)
	for _, exp := range sampledExps {
		n := SampleRows[exp]
		start := time.Now()
		wire, err := run(exp, n)
		if err != nil {
			return nil, fmt.Errorf("sample of %s: %w", exp, err)
		}
		spent := max(time.Since(start)-rt, time.Since(start)/2)
		out[SampleMetric(exp, "us_per_row")] = spent.Seconds() * 1e6 / float64(n)
		if wire > 0 {
			out[SampleMetric(exp, "bytes_per_row")] = float64(wire) / float64(n)
		}
	}
	return out, nil
}

// withSamples adds the samples' figures to a measurement, where it has
// figures.
func withSamples(m workload.Measurement, samples map[string]float64) workload.Measurement {
	if m.Metrics == nil {
		return m
	}
	for k, v := range samples {
		m.Metrics[k] = v
	}
	return m
}

// probeSpinning probes the path's round trip as probeRoundTrips does, with
// a lowest-priority busy loop on each CPU (idleloop), as an idle = "spin"
// point runs: the loops keep the vCPUs from halting, so each round trip
// is spared its halted vCPUs' wake-ups, which the plain probe pays (the
// quiet demo of 2026-11-27: 82.7 against 135 µs a row over loopback),
// and a spin point's round trip is known before it runs. Where the loops
// cannot start (no cpu cgroup of dbrig's own) it gives no figure, as the
// spin points are then skipped.
func probeSpinning(trip func() error) (map[string]float64, error) {
	loops, err := idleloop.Start(nil)
	if errors.As(err, new(engine.NoCgroupError)) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("the probe with busy loops: %w", err)
	}
	probe, err := probeRoundTrips(trip)
	if _, stopErr := loops.Stop(); stopErr != nil {
		err = errors.Join(err, fmt.Errorf("stop the probe's idle loops: %w", stopErr))
	}
	if err != nil {
		return nil, err
	}
	return map[string]float64{ProbeSpinMetric: probe[ProbeMetric]}, nil
}

// serverSideSteps are one engine's parts of a server-side point, which
// probedServerSide runs in the same order on either engine.
type serverSideSteps struct {
	// probe times the path's round trips with timer (probeRoundTrips or
	// probeSpinning) on the engine's round trip of the row-by-row points.
	probe func(timer func(trip func() error) (map[string]float64, error)) (map[string]float64, error)
	// trip makes one trivial round trip, which each sample leaves out.
	trip      func() error
	sample    sampler
	statement func() (workload.Measurement, error)
}

// probedServerSide runs a server-side point: the probe of its path's round
// trip, then on a server-loop point the probe with the idle loops (where
// probe_spin asks for it) and the samples, then the point's statement,
// whose figures carry theirs. The probes and the samples come first, on
// the fresh session, as the points they predict start theirs (see
// probeRoundTrips and takeSamples).
func (w *rbar) probedServerSide(s serverSideSteps) (workload.Measurement, error) {
	probe, err := s.probe(probeRoundTrips)
	if err != nil {
		return workload.Measurement{}, err
	}
	var spin, samples map[string]float64
	if w.experiment == "server-loop" && w.probeSpin {
		if spin, err = s.probe(probeSpinning); err != nil {
			return workload.Measurement{}, err
		}
	}
	if w.experiment == "server-loop" {
		if samples, err = takeSamples(w.transport, s.trip, s.sample); err != nil {
			return workload.Measurement{}, err
		}
	}
	m, err := s.statement()
	return withSamples(withSamples(withSamples(m, probe), spin), samples), err
}
