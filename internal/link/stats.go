package link

import (
	"slices"
	"sync"
	"time"

	"github.com/dbrig/dbrig/internal/units"
)

// Stats is a snapshot of what a link has carried, over all its connections.
type Stats struct {
	Forward DirStats `json:"forward"` // client to upstream
	Reverse DirStats `json:"reverse"` // upstream to client
	// Connections counts every connection accepted; ActiveConnections those
	// still open.
	Connections       int64     `json:"connections"`
	ActiveConnections int64     `json:"active_connections"`
	Started           time.Time `json:"started"`
}

// DirStats is what one direction of a link has carried.
type DirStats struct {
	Bytes        int64 `json:"bytes"`         // payload bytes delivered
	Segments     int64 `json:"segments"`      // segments delivered (each counted once, however often lost)
	LostSegments int64 `json:"lost_segments"` // transmissions lost (Bernoulli loss or collision), each followed by an RTO stall
	// ShadowCollisions counts, on a full-duplex link with a rate, the
	// client-to-upstream segments that started while a frame of the other
	// direction was on the air: the late collisions a duplex mismatch would
	// have caused at the same timing (forward only).
	ShadowCollisions int64 `json:"shadow_collisions,omitempty"`
	// MaxInFlight is the most bytes any one connection had sent into this
	// direction and not yet had acknowledged.
	MaxInFlight int64 `json:"max_in_flight"`
	// WindowStalls counts the times a sender had to wait for the window (or
	// for the proxy's queue limit when the window is unlimited); StallTime is
	// the total of those waits over all connections.
	WindowStalls int64         `json:"window_stalls"`
	StallTime    time.Duration `json:"stall_time_ns"`
	// MaxJitter is the largest extra delay jitter actually produced; it never
	// exceeds Config.Jitter, since a segment cannot overtake the one ahead.
	MaxJitter time.Duration `json:"max_jitter_ns"`
	// MeanLateness and MaxLateness tell how long after the model's delivery
	// time the proxy wrote segments (per write, of its earliest segment):
	// the emulation's own timing error. Zero on a link with no impairment.
	MeanLateness time.Duration `json:"mean_lateness_ns"`
	MaxLateness  time.Duration `json:"max_lateness_ns"`
	// Spun and Unspun split those writes by the scheduler's path to them:
	// a spun write ended a precise sleep (the end of a message, whose
	// deadline the scheduler woke early for and spun to); an unspun one an
	// imprecise sleep or none (a stream paced by its deadlines, data
	// already due when it was read, a wake-up cut short by new data).
	Spun   Lateness `json:"spun"`
	Unspun Lateness `json:"unspun"`
	// FirstDelivery and LastDelivery bound the time bytes were delivered.
	FirstDelivery time.Time `json:"first_delivery"`
	LastDelivery  time.Time `json:"last_delivery"`
	// Series holds the bytes delivered in each SeriesInterval since
	// Stats.Started, booked at delivery time (not read time), for charts of
	// throughput over time. A long run coarsens the interval rather than
	// grow the series without bound.
	Series         []int64       `json:"series"`
	SeriesInterval time.Duration `json:"series_interval_ns"`
}

// Lateness is the timing error of a set of the scheduler's writes.
type Lateness struct {
	Writes int64         `json:"writes"`
	Mean   time.Duration `json:"mean_ns"`
	Max    time.Duration `json:"max_ns"`
}

// Throughput is the payload rate between the first and the last delivery.
// It is zero until two deliveries lie apart in time.
func (s DirStats) Throughput() units.Rate {
	span := s.LastDelivery.Sub(s.FirstDelivery)
	if span <= 0 {
		return 0
	}
	return units.Rate(float64(s.Bytes) * 8 / span.Seconds())
}

// maxSeries bounds a series; past it, neighbouring buckets are merged and
// the interval doubles.
const maxSeries = 1 << 20

// recorder gathers the statistics of every connection of one link. One
// mutex keeps each snapshot consistent; it is taken once per read or
// delivered batch, not per byte.
type recorder struct {
	mu                  sync.Mutex
	started             time.Time
	dirs                [2]DirStats
	late                [2]time.Duration // sum of lateness, for the mean
	writes              [2]int64
	pathLate            [2][2]time.Duration // sum of lateness by direction and spun (1) or not (0)
	connections, active int64
}

func newRecorder(started time.Time, interval time.Duration) *recorder {
	r := &recorder{started: started}
	for i := range r.dirs {
		r.dirs[i].SeriesInterval = interval
	}
	return r
}

// delivered books n bytes in segs segments written to the receiver at at,
// late after the model's time for the earliest of them, spun when the
// scheduler spun for the write.
func (r *recorder) delivered(d direction, n, segs int, at time.Time, late time.Duration, spun bool) {
	r.mu.Lock()
	s := &r.dirs[d]
	r.late[d] += late
	r.writes[d]++
	s.MaxLateness = max(s.MaxLateness, late)
	path, i := &s.Unspun, 0
	if spun {
		path, i = &s.Spun, 1
	}
	path.Writes++
	path.Max = max(path.Max, late)
	r.pathLate[d][i] += late
	s.Bytes += int64(n)
	s.Segments += int64(segs)
	if s.FirstDelivery.IsZero() {
		s.FirstDelivery = at
	}
	s.LastDelivery = at
	b := int(max(at.Sub(r.started), 0) / s.SeriesInterval)
	for b >= maxSeries {
		s.coarsen()
		b /= 2
	}
	if b >= len(s.Series) {
		s.Series = append(s.Series, make([]int64, b+1-len(s.Series))...)
	}
	s.Series[b] += int64(n)
	r.mu.Unlock()
}

// coarsen merges neighbouring buckets and doubles the interval.
func (s *DirStats) coarsen() {
	for i := range (len(s.Series) + 1) / 2 {
		v := s.Series[2*i]
		if 2*i+1 < len(s.Series) {
			v += s.Series[2*i+1]
		}
		s.Series[i] = v
	}
	s.Series = s.Series[:(len(s.Series)+1)/2]
	s.SeriesInterval *= 2
}

// admitted books what the model did to one read: lost transmissions,
// shadow collisions, the largest jitter produced, and the bytes in flight
// after it.
func (r *recorder) admitted(d direction, lost, shadow int64, jitter time.Duration, inFlight int64) {
	r.mu.Lock()
	s := &r.dirs[d]
	s.LostSegments += lost
	s.ShadowCollisions += shadow
	s.MaxJitter = max(s.MaxJitter, jitter)
	s.MaxInFlight = max(s.MaxInFlight, inFlight)
	r.mu.Unlock()
}

// stalled books one wait of a sender for the window.
func (r *recorder) stalled(d direction, wait time.Duration) {
	r.mu.Lock()
	r.dirs[d].WindowStalls++
	r.dirs[d].StallTime += wait
	r.mu.Unlock()
}

func (r *recorder) connOpened() {
	r.mu.Lock()
	r.connections++
	r.active++
	r.mu.Unlock()
}

func (r *recorder) connClosed() {
	r.mu.Lock()
	r.active--
	r.mu.Unlock()
}

func (r *recorder) snapshot() Stats {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := Stats{Forward: r.dirs[forward], Reverse: r.dirs[reverse],
		Connections: r.connections, ActiveConnections: r.active, Started: r.started}
	s.Forward.Series = slices.Clone(s.Forward.Series)
	s.Reverse.Series = slices.Clone(s.Reverse.Series)
	for d, ds := range []*DirStats{&s.Forward, &s.Reverse} {
		if r.writes[d] > 0 {
			ds.MeanLateness = r.late[d] / time.Duration(r.writes[d])
		}
		for i, path := range []*Lateness{&ds.Unspun, &ds.Spun} {
			if path.Writes > 0 {
				path.Mean = r.pathLate[d][i] / time.Duration(path.Writes)
			}
		}
	}
	return s
}
