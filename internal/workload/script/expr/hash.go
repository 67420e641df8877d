package expr

import "math/bits"

// The hash and permutation functions of pgbench, bit for bit, so that a
// script keyed on hash(:id) or permute(:r, :size) touches the same rows
// under dbrig as under pgbench.

const (
	fnvPrime       = 0x100000001b3
	fnvOffsetBasis = 0xcbf29ce484222325
	mm2Mul         = 0xc6a4a7935bd1e995
	mm2MulTimes8   = 0x35253c9ade8f4ca8
	mm2Rot         = 47
)

// hashFNV1a is pgbench's hash_fnv1a(val, seed).
func hashFNV1a(val int64, seed uint64) int64 {
	result := int64(fnvOffsetBasis ^ seed)
	for range 8 {
		octet := val & 0xff
		val >>= 8
		result ^= octet
		result *= fnvPrime
	}
	return result
}

// hashMurmur2 is pgbench's hash_murmur2(val, seed), which hash() is.
func hashMurmur2(val int64, seed uint64) int64 {
	result := seed ^ mm2MulTimes8
	k := uint64(val)
	k *= mm2Mul
	k ^= k >> mm2Rot
	k *= mm2Mul
	result ^= k
	result *= mm2Mul
	result ^= result >> mm2Rot
	result *= mm2Mul
	result ^= result >> mm2Rot
	return int64(result)
}

// permute is pgbench's permute(val, size, seed): val's position in a
// pseudo-random permutation of [0, size) chosen by seed, by six rounds of
// multiply, xor, rotate and offset over the range's two overlapping
// power-of-two halves.
func permute(val, isize, seed int64) int64 {
	if isize < 2 {
		return 0
	}
	r := NewRand(uint64(seed))
	size := uint64(isize)
	v := uint64(val) % size
	masklen := uint(63 - bits.LeadingZeros64(size))
	mask := uint64(1)<<masklen - 1
	for range 6 {
		m := r.Uint64()&mask | 1
		x := r.Uint64() & mask
		if v <= mask {
			v = ((v * m) ^ x) & mask
			v = ((v << 1) & mask) | (v >> (masklen - 1))
		}
		m = r.Uint64()&mask | 1
		x = r.Uint64() & mask
		t := size - 1 - v
		if t <= mask {
			t = ((t * m) ^ x) & mask
			t = ((t << 1) & mask) | (t >> (masklen - 1))
			v = size - 1 - t
		}
		v = (v + r.Uint64Range(0, size-1)) % size
	}
	return int64(v)
}
