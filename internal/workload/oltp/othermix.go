package oltp

import (
	"fmt"

	"github.com/dbrig/dbrig/internal/workload"
)

// Past saturation, C and D both move with the users, not with the
// statements: on duplex-mismatch's full-duplex closed loops (no think
// time, 2 cores; run duplex-mismatch-20261128-041903) point-select's load
// kept 1.63 CPUs busy at 8 users, 1.35 at 32 and 1.27 at 128, a
// transaction costing 105, 105 and 145 µs, and the shop before it fell
// from 5,995/s at 32 users to 4,319/s at 128 through the same link: the
// two cores switch among more processes. C / D from the curve's lighter
// points (or the CPUs it may run on before one saturated) predicted
// point-select's 32 and 128 users 49 % and 46 % too fast. Another mix
// through the same link, server and client that measured both the curve's
// most users so far and the point's has shown that change: the curve's
// own throughput there times the other mix's change caps the capacity.
// Replayed on that run, 32 and 128 users +37.6 % and +5.3 %; on the quiet
// run before it (022320) +19.3 → +9.3 % and +48.7 → +31.0 %; the busy
// run's (h41) summary unchanged.

// otherMixKey is what a point shares with the same load of another mix:
// its curve's key without its mix.
func otherMixKey(r workload.Result) string {
	p := make(workload.Params, len(r.Params))
	for k, v := range r.Params {
		if k != "mix" {
			p[k] = v
		}
	}
	r.Params = p
	return CurveKey(r, false)
}

// otherMixChange is how the throughput of the latest other mix's curve
// measured before r (through the same links, server and client, at full
// duplex) changed from `from` to `to` users, and that mix; false when no
// such curve measured both.
func otherMixChange(r workload.Result, before []workload.Result, from, to float64) (float64, string, bool) {
	key, mix := otherMixKey(r), r.Params.String("mix")
	for i := len(before) - 1; i >= 0; i-- {
		o := before[i]
		if !o.Measured() || o.Params.Float("rate") > 0 || Mismatched(o) || o.Params.String("mix") == mix || otherMixKey(o) != key {
			continue
		}
		var x0, x1 float64
		for _, c := range wholeCurveOf(o, before) {
			switch c.Users {
			case from:
				x0 = c.TPS
			case to:
				x1 = c.TPS
			}
		}
		if x0 > 0 && x1 > 0 {
			return x1 / x0, o.Params.String("mix"), true
		}
	}
	return 0, "", false
}

// capByOtherMix caps a prediction the CPUs capped by the curve's own
// throughput at its most users so far times another mix's change from
// there to the point's users, where that is lower.
func capByOtherMix(pred workload.Prediction, r workload.Result, before []workload.Result, own []CurvePoint) workload.Prediction {
	n := r.Params.Float("users")
	if len(own) == 0 || own[len(own)-1].TPS <= 0 || own[len(own)-1].Users == n {
		return pred
	}
	at := own[len(own)-1]
	change, mix, ok := otherMixChange(r, before, at.Users, n)
	if !ok || at.TPS*change >= pred.Metrics["tps"] {
		return pred
	}
	pred.Metrics["tps"] = at.TPS * change
	pred.Formula += fmt.Sprintf(", capped by this curve's %s/s at %g users × the %s mix's change from %g to %g users through the same link (%.2f) = %s/s",
		FormatTPS(at.TPS), at.Users, mix, at.Users, n, change, FormatTPS(pred.Metrics["tps"]))
	pred.Reason += fmt.Sprintf("; past saturation the CPUs the load keeps busy and a transaction's CPU move with the users, as the %s mix's did: that change measured on another mix, not on this one", mix)
	return pred
}
