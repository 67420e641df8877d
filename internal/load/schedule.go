package load

import (
	"math"
	"math/rand/v2"
	"time"
)

// schedule produces an open loop's intended start times, as offsets from the
// start of the run. Arrivals are evenly spaced (or Poisson) in "operational
// time" s, the expected number of arrivals so far, and mapped to wall time
// through the inverse of the cumulative rate Λ(t): with a ramp-up of length
// T the rate rises linearly from 0 to r, so Λ(t) = r·t²/(2T) for t < T and
// r·(t − T/2) after. One mapping serves both processes and any ramp exactly.
type schedule struct {
	perNs   float64 // arrivals per nanosecond
	ramp    float64 // ns
	poisson bool
	rng     *rand.Rand
	s       float64 // operational time of the last arrival
	n       int64   // arrivals produced
}

func newSchedule(rate float64, arrival Arrival, ramp time.Duration, seed uint64) *schedule {
	return &schedule{
		perNs:   rate / float64(time.Second),
		ramp:    float64(ramp),
		poisson: arrival == Poisson,
		rng:     rand.New(rand.NewPCG(seed, math.MaxUint64)), // a stream no worker uses
		s:       -1,
	}
}

// next returns the intended start of the next arrival.
func (s *schedule) next() time.Duration {
	if s.poisson {
		if s.s < 0 {
			s.s = 0
		}
		s.s += s.rng.ExpFloat64()
	} else {
		// The n-th fixed arrival sits at s = n exactly (no accumulated
		// rounding), the first at the start of the run.
		s.s = float64(s.n)
	}
	s.n++
	return time.Duration(math.Round(s.at(s.s)))
}

// at is Λ⁻¹(ops): the wall time in ns by which ops arrivals are expected.
func (s *schedule) at(ops float64) float64 {
	if s.ramp > 0 {
		if rampOps := s.perNs * s.ramp / 2; ops < rampOps {
			return math.Sqrt(2 * s.ramp * ops / s.perNs)
		}
		return ops/s.perNs + s.ramp/2
	}
	return ops / s.perNs
}
