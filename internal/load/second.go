package load

import (
	"time"

	"github.com/dbrig/dbrig/internal/workload"
)

// Second is the interval as a live view of the run shows it
// ([workload.Env.Second]).
func (iv Interval) Second() workload.Second {
	o := iv.Overall
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	return workload.Second{EndS: (iv.Start + iv.Length).Seconds(), Phase: iv.Phase.String(), Users: iv.Users,
		TPS: o.TPS(iv.Length), P50Ms: ms(o.P50), P99Ms: ms(o.P99), Errors: o.Errors.Total()}
}
