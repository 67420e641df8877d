package loadoltp

import (
	"fmt"

	"github.com/dbrig/dbrig/internal/study"
	"github.com/dbrig/dbrig/internal/units"
	"github.com/dbrig/dbrig/internal/workload"
	"github.com/dbrig/dbrig/internal/workload/oltp"
)

// DuplexPair is a mismatched combination and its full-duplex twin: the
// same parameters (users, or an open loop's rate) on the same link at full
// duplex.
type DuplexPair struct {
	Mix         string
	Wire        string // the link's rate: "1Gbit/s"
	Users, Rate float64
	Full        *study.Summary
	Mismatched  *study.Summary
	ReportQuery bool // the mix is the reporting query alone
}

// Open reports whether the pair ran an open loop (a given load).
func (x DuplexPair) Open() bool { return x.Rate > 0 }

// Load names the pair's load: "32 users", "500/s (open loop, 32 users)".
func (x DuplexPair) Load() string {
	if x.Open() {
		return fmt.Sprintf("%s/s (open loop, %g users)", oltp.FormatTPS(x.Rate), x.Users)
	}
	return fmt.Sprintf("%g users", x.Users)
}

// wireOf names a point's link by its rate: "1gbit", "100mbit".
func wireOf(r workload.Result) string {
	l := r.Link()
	if l.RateBitsPerS == 0 {
		return l.Profile
	}
	return units.Rate(l.RateBitsPerS).String()
}

// DuplexPairs matches each mismatched combination with its full-duplex
// twin, in the run's order.
func DuplexPairs(rd *study.RunData) []DuplexPair {
	var out []DuplexPair
	for _, ms := range rd.Summaries {
		if len(ms.Results) == 0 || !oltp.Mismatched(ms.Results[0]) {
			continue
		}
		key := oltp.CurveKey(ms.Results[0], true)
		for _, fs := range rd.Summaries {
			if len(fs.Results) == 0 || oltp.Mismatched(fs.Results[0]) || fs.Params.Int("users") != ms.Params.Int("users") || oltp.CurveKey(fs.Results[0], true) != key {
				continue
			}
			mix := ms.Params.String("mix")
			out = append(out, DuplexPair{Mix: mix, Wire: wireOf(ms.Results[0]), Users: ms.Params.Float("users"), Rate: ms.Params.Float("rate"),
				Full: fs, Mismatched: ms, ReportQuery: isReporting(mix)})
			break
		}
	}
	return out
}

// isReporting reports whether a mix is the reporting query alone.
func isReporting(mix string) bool {
	m, err := oltp.ParseMix(mix)
	return err == nil && m.ReportOnly()
}

// StalledShare is the share of a combination's users' time spent waiting
// out retransmission timeouts: each segment its link lost stalls one
// user for at least one RTO, over the users' time of the whole point
// (warm-up included, as the link's count is).
func StalledShare(s *study.Summary) (share float64, lost int64) {
	var stalled, userTime float64
	for _, r := range s.Results {
		l := r.Link()
		lost += l.LostSegments
		stalled += float64(l.LostSegments) * l.RTOSeconds
		userTime += r.Params.Float("users") * r.Seconds
	}
	if userTime == 0 {
		return 0, lost
	}
	return stalled / userTime, lost
}
