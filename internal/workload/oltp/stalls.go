package oltp

import (
	"math"
	"slices"
)

// A user whose segment collided waits an RTO while the others go on, so
// the stalls are a delay (every stalled user waits its own) in front of
// the rest of the system: the link, the client and the server the
// full-duplex curve measured. Its throughput with j users circulating,
// μ(j), is that curve's (the flow-equivalent server of a closed network:
// the twin's curve with j users, interpolated between its points and
// linear from none to its lightest), and the N users split between the
// two as a birth-death chain: p(j) ∝ Π (N − i + 1) / s / μ(i), X = Σ p(j)
// μ(j). With μ linear (no queue: j / C) it is N / (C + s), the stalls
// added to the whole cycle; where the twin's users queued for the CPUs,
// a stalled user's CPU goes to those left, whose queue shortens.
// Replayed on the quiet quick duplex-mismatch runs of 2026-11-28 (022320,
// 041903 and 043747: DBRIG_REPLAY="runs/..." go test -run
// ReplayPredictions ./studies/), point-select at 32 users through the
// 1 Gbit/s mismatch went from -11.4, -11.6 and -21.0 % to -1.2, -2.6 and
// -13.3 % (prediction against measurement), and the runs' headline
// figures from a median error of 7.1, 9.6 and 8.6 % to 5.5, 5.0 and
// 8.6 %, their p90 unchanged (27.0 -> 26.6, 29.3 and 45.6 %); a busy run
// (h41) from 10.5 to 10.8 %, p90 38.4 % both.

// stalledThroughput is X for n users when each transaction stalls its user
// s = a × X on average (collisions grow with the server's traffic), the
// users not stalled running at curve's throughput: the X where the chain's
// throughput at that s is X again (the chain's falls as X rises).
func stalledThroughput(n int, curve []CurvePoint, a float64) float64 {
	full := activeTPS(curve, float64(n))
	if a <= 0 || n <= 0 || full <= 0 {
		return full
	}
	mu := make([]float64, n+1)
	for j := range mu {
		mu[j] = activeTPS(curve, float64(j))
	}
	lo, hi := 0.0, full
	for range 60 {
		mid := (lo + hi) / 2
		if chainTPS(mu, a*mid) > mid {
			lo = mid
		} else {
			hi = mid
		}
	}
	return (lo + hi) / 2
}

// chainTPS is the throughput of len(mu) - 1 users between a delay of mean
// s (the stalls) and a station that completes mu[j] transactions a second
// with j users.
func chainTPS(mu []float64, s float64) float64 {
	n := len(mu) - 1
	logs := make([]float64, n+1)
	for j := 1; j <= n; j++ {
		logs[j] = logs[j-1] + math.Log(float64(n-j+1)/s) - math.Log(mu[j])
	}
	top := slices.Max(logs)
	var sum, x float64
	for j, v := range logs {
		p := math.Exp(v - top)
		sum += p
		x += p * mu[j]
	}
	return x / sum
}

// activeTPS is curve's throughput with j users: linear from none to its
// lightest point and between its points, its heaviest's beyond.
func activeTPS(curve []CurvePoint, j float64) float64 {
	if len(curve) == 0 {
		return 0
	}
	first := curve[0]
	if j <= first.Users {
		return first.TPS * j / first.Users
	}
	for i := 1; i < len(curve); i++ {
		lo, hi := curve[i-1], curve[i]
		if j <= hi.Users {
			return lo.TPS + (hi.TPS-lo.TPS)*(j-lo.Users)/(hi.Users-lo.Users)
		}
	}
	return curve[len(curve)-1].TPS
}
