package oltp

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/dbrig/dbrig/internal/engine/mariadb"
	"github.com/dbrig/dbrig/internal/engine/postgres"
)

// Standalone is what `dbrig load oltp` runs: the mix under virtual users
// against one server, as a study of one instance, so that it runs, records
// and reports exactly as a study does (and `dbrig report`, `dbrig compare`
// read its run directory).
type Standalone struct {
	Engine string // of the server dbrig starts, or of the target
	// Users are the virtual users of each point: one value, or several to
	// sweep them.
	Users    []int
	Scale    float64
	Mix      string
	Duration time.Duration
	WarmUp   time.Duration
	RampUp   time.Duration
	// Rate > 0 is an open loop.
	Rate        float64
	Arrival     string
	MaxInFlight int
	Think       time.Duration
	ThinkFixed  bool
	Keying      time.Duration
	TxLimit     time.Duration
	Seed        int64
	// Target: the server is the user's: dbrig sets no server setting.
	Target bool
}

// StandaloneStudy is the standalone run's study name (its run directories
// are runs/load-oltp-<time>).
const StandaloneStudy = "load-oltp"

// Spec writes the run as a study file.
func (s Standalone) Spec() []byte {
	var b strings.Builder
	w := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	users := make([]string, len(s.Users))
	most := 0
	for i, u := range s.Users {
		users[i] = strconv.Itoa(u)
		most = max(most, u)
	}
	loop := "a closed loop"
	if s.Rate > 0 {
		loop = fmt.Sprintf("an open loop at %s transactions per second", strconv.FormatFloat(s.Rate, 'f', -1, 64))
	}
	w("# An OLTP run written by `dbrig load oltp`; `dbrig report DIR` rebuilds its report.\n")
	w("name = %q\n", StandaloneStudy)
	w("title = %q\n", fmt.Sprintf("OLTP, mix %s, scale factor %s", s.Mix, formatScale(s.Scale)))
	w("question = %q\n", fmt.Sprintf("What throughput and response times does this server give the %s mix under %s virtual users in %s?", s.Mix, strings.Join(users, ", "), loop))
	w("\n[source]\nstudy = %q\n", "dbrig's online shop (seeds 001 and 002): browse, search, view product, add to cart, place order; or one primary-key lookup per transaction")
	w("\n[[instance]]\nname = \"db\"\nengine = %q\n", s.Engine)
	if !s.Target {
		// Enough connection slots for every user, the preparing session,
		// and the monitoring connection's reserved ones.
		if need := most + 10; need > 100 {
			switch s.Engine {
			case postgres.Name, mariadb.EngineName:
				w("[instance.settings]\nmax_connections = %d\n", need)
			}
		}
	}
	// The client on the server's site: its unix socket when dbrig can reach
	// one, else the address the target's URI gives; no emulated link.
	w("\n[client]\nsite = \"db\"\n")
	w("\n[workload]\nkind = \"oltp\"\nmix = %q\nscale_factor = %s\nusers = \"${users}\"\n", s.Mix, formatFloat(s.Scale))
	w("duration = %q\nwarm_up = %q\nramp_up = %q\n", s.Duration.String(), s.WarmUp.String(), s.RampUp.String())
	if s.Rate > 0 {
		w("rate = %s\narrival = %q\nmax_in_flight = %d\n", formatFloat(s.Rate), s.Arrival, s.MaxInFlight)
	} else {
		dist := "exponential"
		if s.ThinkFixed {
			dist = "fixed"
		}
		w("think = %q\nthink_distribution = %q\nkeying = %q\n", s.Think.String(), dist, s.Keying.String())
	}
	w("tx_limit = %q\nseed = %d\n", s.TxLimit.String(), s.Seed)
	w("\n[sweep]\nusers = [%s]\n\n[repeat]\nruns = 1\n", strings.Join(users, ", "))
	return []byte(b.String())
}

// formatFloat writes a number TOML reads as a float.
func formatFloat(v float64) string {
	s := strconv.FormatFloat(v, 'g', -1, 64)
	if !strings.ContainsAny(s, ".eE") {
		s += ".0"
	}
	return s
}
