package oltp_test

import (
	"math"
	"strings"
	"testing"

	"github.com/dbrig/dbrig/internal/workload"
	"github.com/dbrig/dbrig/internal/workload/oltp/oltptest"

	"github.com/dbrig/dbrig/internal/workload/oltp"
)

// noThinkPoint is a closed loop with no think time through lan-1g (or its
// mismatch) whose server kept cpu CPUs busy and whose client spent
// clientUS µs a transaction.
func noThinkPoint(mix string, mismatched bool, users int, tps, cpu, clientUS float64) workload.Result {
	net := "lan-1g"
	if mismatched {
		net += "+duplex-mismatch"
	}
	r := oltptest.Results("duplex-mismatch", "0s", []oltptest.Point{{Mix: mix, Net: net, Users: users, TPS: tps, MeanMS: 1000 * float64(users) / tps, CPU: cpu}})[0]
	r.Metrics["client_cpu_us_per_tx"] = clientUS
	return r
}

// TestPredictCapacityByAnotherMixsChange: past saturation another mix's
// change from the curve's most users so far to the point's, through the
// same link, caps the capacity by the CPUs (point-select's 8 users used
// 1.55 CPUs, its 32 users 1.34 at 111.67 µs a transaction: 12,000/s; the
// shop went from 5,000/s at 8 users to 6,000/s at 32 and 4,200/s at 128),
// and leaves it where it is lower, where no other mix measured both users,
// and where the other mix's curve is a mismatched link's.
func TestPredictCapacityByAnotherMixsChange(t *testing.T) {
	t.Parallel()
	shop := func(mismatched bool, at128 float64) []workload.Result {
		return []workload.Result{
			noThinkPoint("shop", mismatched, 8, 5000, 1.0, 200),
			noThinkPoint("shop", mismatched, 32, 6000, 1.0, 150),
			noThinkPoint("shop", mismatched, 128, at128, 0.9, 150),
		}
	}
	ps8 := noThinkPoint("point-select", false, 8, 15000, 0.5, 70)
	ps32 := noThinkPoint("point-select", false, 32, 12000, 0.5, 70)
	for _, tc := range []struct {
		name    string
		before  []workload.Result
		users   int
		want    float64
		formula string // a part of what the prediction says ("" when the other mix's change is not in it)
	}{
		{"the other mix fell from 32 to 128 users", append(shop(false, 4200), ps8, ps32), 128, 12000 * 0.7, "× the shop mix's change from 32 to 128 users through the same link (0.70) = 8400/s"},
		{"the other mix rose from 8 to 32 users, below the CPUs' ceiling", append(shop(false, 4200), ps8), 32, 15000 * 1.2, "× the shop mix's change from 8 to 32 users through the same link (1.20) = 18000/s"},
		{"the other mix rose above the capacity", append(shop(false, 9000), ps8, ps32), 128, 12000, ""},
		{"no other mix measured the point's users", append(shop(false, 4200)[:2], ps8, ps32), 128, 12000, ""},
		{"the other mix's curve is a mismatched link's", append(shop(true, 4200), ps8, ps32), 128, 12000, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			next := noThinkPoint("point-select", false, tc.users, 1, 1, 1)
			p := oltp.Predict(next, tc.before)
			got := p.Metrics["tps"]
			if math.Abs(got-tc.want) > 1e-6*tc.want {
				t.Errorf("point-select at %d users: %v, want %v (%s)", tc.users, got, tc.want, p.Formula)
			}
			says := strings.Contains(p.Formula, "mix's change from")
			if tc.formula == "" && says || tc.formula != "" && !strings.Contains(p.Formula, tc.formula) {
				t.Errorf("point-select at %d users: formula %q, want it to say %q", tc.users, p.Formula, tc.formula)
			}
			if tc.formula != "" && !strings.Contains(p.Reason, "that change measured on another mix") {
				t.Errorf("point-select at %d users: reason %q, want it to say the change is another mix's", tc.users, p.Reason)
			}
		})
	}
}
