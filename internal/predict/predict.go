package predict

import (
	"fmt"
	"math"
	"time"

	"github.com/dbrig/dbrig/internal/link"
)

// Calibration is one transaction's cost measured on an unimpaired path.
type Calibration struct {
	// RoundTrips are the turns of the conversation per transaction: the
	// times the client wrote after having read.
	RoundTrips float64
	// BytesOut and BytesIn are what a transaction carried each way.
	BytesOut, BytesIn float64
	// Server is the time a transaction waited for answers less its round
	// trips times the calibration path's own RTT: the server's work and the
	// unimpaired path's (loopback, the proxy) per transaction.
	Server time.Duration
	// Client is the time a transaction spent in the client, neither
	// waiting for the server nor asleep.
	Client time.Duration
	// Capacity is the throughput the server sustained on the unimpaired
	// path at CapacityUsers users (transactions per second; 0: unknown,
	// no bound).
	Capacity      float64
	CapacityUsers int
	// TurnOverhead is what a round trip through a delayed path costs
	// beyond its RTT: the server and the client, idle for the RTT, wake up
	// (a CPU out of its idle state, a process scheduled again), which a
	// path without delay, where they hardly sleep, does not show.
	// Measured on a point with a delay (WithDelayed); 0: not measured.
	TurnOverhead time.Duration
}

// WithDelayed adds the turn overhead measured on a point at the same
// users through link l, whose transactions waited wait each: what the
// waits took beyond the server, the RTTs, serialization and window stalls.
func (c Calibration) WithDelayed(wait time.Duration, l link.Config) Calibration {
	c.TurnOverhead = 0
	if c.RoundTrips > 0 {
		p := c.parts(l)
		c.TurnOverhead = max(time.Duration(float64(wait-p.Server-p.Latency-p.Serialization-p.WindowStalls)/c.RoundTrips), 0)
	}
	return c
}

// Calibrate derives a calibration from a run's per-transaction means: the
// time waiting for the server (wait) and the path's RTT (pathRTT, the
// calibration link's delay, 0 on a link with none).
func Calibrate(trips, bytesOut, bytesIn float64, wait, client, pathRTT time.Duration) Calibration {
	server := wait - time.Duration(trips*float64(pathRTT))
	return Calibration{RoundTrips: trips, BytesOut: bytesOut, BytesIn: bytesIn, Server: max(server, 0), Client: client}
}

// What dominates a predicted figure.
const (
	Latency   = "latency"
	Bandwidth = "bandwidth"
	Window    = "window"
	Server    = "server"
	Client    = "client"
)

// Estimate is a predicted point.
type Estimate struct {
	TPS float64
	// Response is the mean response time; math.MaxInt64 when an open
	// loop's rate exceeds what the server or the link can take.
	Response time.Duration
	// Dominant is what bounds the figure: Latency, Bandwidth, Window,
	// Server or Client.
	Dominant string
	// Parts is the response time of one transaction on an idle server,
	// term by term.
	Parts Parts
}

// Parts are a transaction's response time on an idle server, by term.
type Parts struct {
	Client, Server, Latency, Serialization, WindowStalls time.Duration
}

// Sum is the response time on an idle server.
func (p Parts) Sum() time.Duration {
	return p.Client + p.Server + p.Latency + p.Serialization + p.WindowStalls
}

// largest names the largest term.
func (p Parts) largest() string {
	name, most := Server, p.Server
	for _, t := range []struct {
		name string
		d    time.Duration
	}{{Latency, p.Latency}, {Bandwidth, p.Serialization}, {Window, p.WindowStalls}, {Client, p.Client}} {
		if t.d > most {
			name, most = t.name, t.d
		}
	}
	return name
}

// parts puts one transaction through the link.
func (c Calibration) parts(l link.Config) Parts {
	rtt := l.EffectiveRTT()
	p := Parts{Client: c.Client, Server: c.Server, Latency: time.Duration(c.RoundTrips * float64(rtt+c.TurnOverhead))}
	p.Serialization = l.SerializationTime(int64(math.Round(c.BytesOut))) + l.SerializationTime(int64(math.Round(c.BytesIn)))
	p.WindowStalls = time.Duration((stalls(c.BytesOut, c.RoundTrips, l) + stalls(c.BytesIn, c.RoundTrips, l)) * float64(rtt))
	return p
}

// stalls are the round trips a transaction's messages of one direction
// wait for the window to open: a message larger than the window waits for
// the acknowledgement of each window's worth before the last.
func stalls(bytes, trips float64, l link.Config) float64 {
	w := l.InFlight() // the window, or a smaller send buffer
	if w <= 0 || trips <= 0 {
		return 0
	}
	message := bytes / trips
	return trips * max(math.Ceil(message/float64(w))-1, 0)
}

// linkCapacity is the transactions per second the link's rate carries, in
// the busier direction (+Inf when unlimited).
func (c Calibration) linkCapacity(l link.Config) float64 {
	d := max(l.SerializationTime(int64(math.Round(c.BytesOut))), l.SerializationTime(int64(math.Round(c.BytesIn))))
	if d <= 0 {
		return math.Inf(1)
	}
	return 1 / d.Seconds()
}

func (c Calibration) serverCapacity() float64 {
	if c.Capacity <= 0 {
		return math.Inf(1)
	}
	return c.Capacity
}

// Closed predicts a closed loop: users each running a transaction, then
// thinking for think on average.
func Closed(c Calibration, l link.Config, users int, think time.Duration) Estimate {
	p := c.parts(l)
	cycle := p.Sum() + think
	e := Estimate{Parts: p, Response: p.Sum(), Dominant: p.largest()}
	if cycle <= 0 {
		return Estimate{Parts: p, TPS: math.Inf(1), Dominant: p.largest()}
	}
	e.TPS = float64(users) / cycle.Seconds()
	if limit, by := c.bound(l); limit < e.TPS {
		// Users queue for the bottleneck: the cycle stretches to
		// users / capacity.
		e.TPS, e.Dominant = limit, by
		e.Response = max(time.Duration(float64(users)/limit*1e9)-think, p.Sum())
	}
	return e
}

// bound is the lower of the server's and the link's capacity, and which.
func (c Calibration) bound(l link.Config) (float64, string) {
	server, wire := c.serverCapacity(), c.linkCapacity(l)
	if wire < server {
		return wire, Bandwidth
	}
	return server, Server
}

// Open predicts an open loop: transactions arriving at rate per second.
// The server's time grows as an M/M/1 queue's with the capacity as its
// service rate.
func Open(c Calibration, l link.Config, rate float64) Estimate {
	p := c.parts(l)
	if limit, by := c.bound(l); rate >= limit {
		return Estimate{Parts: p, TPS: limit, Response: time.Duration(math.MaxInt64), Dominant: by}
	}
	queued := p
	queued.Server = time.Duration(float64(p.Server) / (1 - rate/c.serverCapacity()))
	return Estimate{Parts: p, TPS: rate, Response: queued.Sum(), Dominant: queued.largest()}
}

// Tolerance is the error within which a prediction holds.
const Tolerance = 0.05

// Comparison is a measured figure beside the one predicted before it ran.
type Comparison struct {
	Predicted, Measured float64
	// Error is (measured - predicted) / predicted.
	Error float64
}

// Compare states a measured figure's error against its prediction.
func Compare(predicted, measured float64) Comparison {
	c := Comparison{Predicted: predicted, Measured: measured, Error: math.NaN()}
	if predicted != 0 && !math.IsInf(predicted, 0) {
		c.Error = (measured - predicted) / predicted
	}
	return c
}

// Holds reports whether the measured figure is within Tolerance of the
// prediction.
func (c Comparison) Holds() bool { return math.Abs(c.Error) <= Tolerance }

func (c Comparison) String() string {
	verdict := "holds"
	if !c.Holds() {
		verdict = fmt.Sprintf("differs beyond %.0f %%", 100*Tolerance)
	}
	return fmt.Sprintf("predicted %.4g, measured %.4g, error %+.1f %% (%s)", c.Predicted, c.Measured, 100*c.Error, verdict)
}

// The metrics a workload reports per transaction for a calibration (the
// script workload's).
const (
	RoundTripsMetric = "round_trips_per_tx"
	BytesOutMetric   = "bytes_out_per_tx"
	BytesInMetric    = "bytes_in_per_tx"
	WaitMetric       = "wait_ms_per_tx"
	ClientMetric     = "client_ms_per_tx"
	TPSMetric        = "tps"
	UsersMetric      = "users"
)

// FromMetrics reads a calibration from a point's metrics, measured on a
// path whose own RTT is pathRTT; false when the workload reports no round
// trips. The point's tps becomes the server's capacity at its users.
func FromMetrics(m map[string]float64, pathRTT time.Duration) (Calibration, bool) {
	trips, ok := m[RoundTripsMetric]
	if !ok || trips <= 0 {
		return Calibration{}, false
	}
	ms := func(name string) time.Duration { return time.Duration(m[name] * float64(time.Millisecond)) }
	c := Calibrate(trips, m[BytesOutMetric], m[BytesInMetric], ms(WaitMetric), ms(ClientMetric), pathRTT)
	c.Capacity, c.CapacityUsers = m[TPSMetric], int(m[UsersMetric])
	return c, true
}
