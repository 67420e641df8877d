package expr

import (
	"math"
	"math/bits"
)

// Rand is PostgreSQL's pseudo-random generator (src/common/pg_prng.c:
// xoroshiro128** 1.0, seeded through splitmix64), so that a script run
// with a seed draws what pgbench 15 draws with that --random-seed.
type Rand struct{ s0, s1 uint64 }

// NewRand returns a generator seeded as pg_prng_seed seeds one.
func NewRand(seed uint64) Rand {
	var r Rand
	r.Seed(seed)
	return r
}

// Seed resets the generator from a 64-bit seed.
func (r *Rand) Seed(seed uint64) {
	r.s0 = splitmix64(&seed)
	r.s1 = splitmix64(&seed)
	if r.s0 == 0 && r.s1 == 0 {
		r.s0, r.s1 = 0x5851F42D4C957F2D, 0x14057B7EF767814F
	}
}

func splitmix64(state *uint64) uint64 {
	*state += 0x9E3779B97f4A7C15
	v := *state
	v = (v ^ (v >> 30)) * 0xBF58476D1CE4E5B9
	v = (v ^ (v >> 27)) * 0x94D049BB133111EB
	return v ^ (v >> 31)
}

// Uint64 is the next 64 random bits.
func (r *Rand) Uint64() uint64 {
	s0 := r.s0
	sx := r.s1 ^ s0
	v := bits.RotateLeft64(s0*5, 7) * 9
	r.s0 = bits.RotateLeft64(s0, 24) ^ sx ^ (sx << 16)
	r.s1 = bits.RotateLeft64(sx, 37)
	return v
}

// Uint64Range is uniform in [lo, hi] by bitmask rejection, as
// pg_prng_uint64_range.
func (r *Rand) Uint64Range(lo, hi uint64) uint64 {
	if hi <= lo {
		return lo
	}
	span := hi - lo
	shift := uint(bits.LeadingZeros64(span))
	for {
		v := r.Uint64() >> shift
		if v <= span {
			return lo + v
		}
	}
}

// Float64 is uniform in [0, 1) from the top 52 bits, as pg_prng_double.
func (r *Rand) Float64() float64 {
	return math.Ldexp(float64(r.Uint64()>>12), -52)
}

// normal is a standard normal deviate by Box-Muller, drawing its two
// uniforms in (0, 1] as pgbench does.
func (r *Rand) normal() float64 {
	u1 := 1.0 - r.Float64()
	u2 := 1.0 - r.Float64()
	return math.Sqrt(-2.0*math.Log(u1)) * math.Sin(2.0*math.Pi*u2)
}

// uniform is pgbench's random(min, max).
func (r *Rand) uniform(lo, hi int64) int64 {
	return lo + int64(r.Uint64Range(0, uint64(hi-lo)))
}

// exponential is pgbench's random_exponential: an exponential distribution
// cut at param, projected onto [lo, hi].
func (r *Rand) exponential(lo, hi int64, param float64) int64 {
	cut := math.Exp(-param)
	u := 1.0 - r.Float64()
	x := -math.Log(cut+(1.0-cut)*u) / param
	return lo + int64(float64(hi-lo+1)*x)
}

// gaussian is pgbench's random_gaussian: a normal distribution cut at
// ±param, projected onto [lo, hi].
func (r *Rand) gaussian(lo, hi int64, param float64) int64 {
	var z float64
	for {
		z = r.normal()
		if z >= -param && z < param {
			break
		}
	}
	x := (z + param) / (param * 2.0)
	return lo + int64(float64(hi-lo+1)*x)
}

// zipfian is pgbench's random_zipfian, by rejection (Devroye, Non-Uniform
// Random Variate Generation, 1986, pp. 550-551).
func (r *Rand) zipfian(lo, hi int64, s float64) int64 {
	n := hi - lo + 1
	if n <= 1 {
		return lo
	}
	b := math.Pow(2.0, s-1.0)
	for {
		u := r.Float64()
		v := r.Float64()
		x := math.Floor(math.Pow(u, -1.0/(s-1.0)))
		t := math.Pow(1.0+1.0/x, s-1.0)
		if v*x*(t-1.0)/(b-1.0) <= t/b && x <= float64(n) {
			return lo - 1 + int64(x)
		}
	}
}
