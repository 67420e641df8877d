package rbarlatency

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/dbrig/dbrig/internal/idleloop"
	"github.com/dbrig/dbrig/internal/study"
	"github.com/dbrig/dbrig/internal/units"
	"github.com/dbrig/dbrig/internal/workload/rbar"
)

type analysis struct {
	rd    *study.RunData
	links []string // link profiles in speed order
	// by experiment, client cost, link profile and facet
	sums map[string]*study.Summary
	// facetOf names a combination's values of swept variables the
	// study's own grouping does not cover; facets lists them in order.
	facetOf func(*study.Summary) string
	facets  []string
	// facet is the one the judges read now.
	facet string
}

func key(exp, cost, net, facet string) string { return exp + "|" + cost + "|" + net + "|" + facet }

func baseKey(s *study.Summary) string {
	return key(expKey(s), s.Params.String("client_cost"), study.LinkOf(s.Results[0]).Profile, "")
}

// expKey is a combination's experiment as the analysis files it: on a
// server or with a client capped at a cpu_speed, the experiment at that
// speed ("server-loop@0.5", "cursor-messages@client0.5"), so that every other finding reads the uncapped
// points alone and the speed is no facet of theirs.
func expKey(s *study.Summary) string {
	exp := s.Params.String("experiment")
	if speed := s.Results[0].Instance().CPUSpeed; speed > 0 {
		exp = atSpeed(exp, speed)
	}
	if speed := s.Results[0].Client.CPUSpeed; speed > 0 {
		exp = atClientSpeed(exp, speed)
	}
	if s.Results[0].Client.Idle == idleloop.Spin {
		exp = spinning(exp)
	}
	return exp
}

// spinning files an experiment run with a busy loop on each CPU
// (client.idle "spin") apart, as a speed is: vm-penalty compares it with
// the halting CPUs' point, and every other finding reads those alone.
func spinning(exp string) string { return exp + "@spin" }

func atSpeed(exp string, speed float64) string {
	return exp + "@" + strconv.FormatFloat(speed, 'g', -1, 64)
}

func atClientSpeed(exp string, speed float64) string {
	return exp + "@client" + strconv.FormatFloat(speed, 'g', -1, 64)
}

func newAnalysis(rd *study.RunData) *analysis {
	a := &analysis{rd: rd, sums: map[string]*study.Summary{}}
	a.facetOf, a.facets = rd.Facets(baseKey)
	rank := map[string]float64{}
	for _, s := range rd.Summaries {
		l := study.LinkOf(s.Results[len(s.Results)-1])
		a.sums[key(expKey(s), s.Params.String("client_cost"), l.Profile, a.facetOf(s))] = s
		if _, ok := rank[l.Profile]; !ok {
			rank[l.Profile] = rbar.SpeedRank(l)
			a.links = append(a.links, l.Profile)
		}
	}
	slices.SortStableFunc(a.links, func(x, y string) int {
		switch {
		case rank[x] < rank[y]:
			return -1
		case rank[x] > rank[y]:
			return 1
		}
		return 0
	})
	return a
}

const fast = "0s"

// slowCost finds the slow client's cost in the run ("25us"), if any.
func (a *analysis) slowCost() string {
	for _, s := range a.rd.Summaries {
		if c := s.Params.String("client_cost"); c != fast && c != "" {
			return c
		}
	}
	return ""
}

func (a *analysis) sum(exp, cost, net string) *study.Summary {
	return a.sums[key(exp, cost, net, a.facet)]
}

func (a *analysis) mean(exp, cost, net, metric string) float64 {
	if s := a.sum(exp, cost, net); s != nil {
		return s.Mean(metric)
	}
	return math.NaN()
}

func (a *analysis) stat(exp, cost, net, metric string) study.Stat {
	if s := a.sum(exp, cost, net); s != nil {
		return s.Stats[metric]
	}
	return study.Stat{}
}

// predicted is the model's value stored when the point ran (its last run).
func (a *analysis) predicted(exp, cost, net, metric string) float64 {
	return storedModel(a.sum(exp, cost, net), metric)
}

func storedModel(s *study.Summary, metric string) float64 {
	if s == nil {
		return math.NaN()
	}
	if v, ok := s.Results[len(s.Results)-1].Model[metric]; ok {
		return v
	}
	return math.NaN()
}

// wanLink reports whether a link's RTT is at least 1 ms: there the round
// trip dominates a row; below it the proxy's own cost per round trip shows.
func (a *analysis) wanLink(net string) bool {
	s := a.sum("client-row-by-row", fast, net)
	return s != nil && study.LinkOf(s.Results[0]).RTTSeconds >= 1e-3
}

// noLink is a stream on the fastest path without a link: its rate, where
// it ran, and the CPUs the server's processes kept busy (NaN when no sample
// says). The rate is what the slower end manages: the client absorbing, or
// the server sending from its one process per session.
type noLink struct {
	rate      float64
	where     string
	serverCPU float64
}

// serverBoundCPU is the server's busy CPUs from which the rate without a
// link is taken for the server's: a session's rows leave one process (a
// PostgreSQL backend, a MariaDB thread), so one busy CPU is its ceiling.
const serverBoundCPU = 0.85

// serverBound reports whether the server, not the consumer, set the rate.
func (n noLink) serverBound() bool { return n.serverCPU >= serverBoundCPU }

// ends names what set the rate without a link, for a finding's text.
func (n noLink) ends() string {
	switch {
	case n.serverBound():
		return fmt.Sprintf("the server sends %s on %s (its process busy %.2f CPUs)", units.Rate(n.rate), n.where, n.serverCPU)
	case math.IsNaN(n.serverCPU):
		return fmt.Sprintf("%s on %s (no sample of the server's CPU says which end sets it)", units.Rate(n.rate), n.where)
	}
	return fmt.Sprintf("the client absorbs %s on %s (the server's process busy %.2f CPUs)", units.Rate(n.rate), n.where, n.serverCPU)
}

// noLinkRate is the stream's rate without a link (direct loopback, else
// the unix socket), the model's consumer rate for links.
func (a *analysis) noLinkRate(exp string) noLink {
	for _, p := range []struct{ net, where string }{{"direct", "direct loopback TCP"}, {"unix", "the unix socket"}} {
		if v := a.mean(exp, fast, p.net, "throughput_bps"); !math.IsNaN(v) {
			return noLink{rate: v, where: p.where, serverCPU: a.serverCPU(exp, fast, p.net)}
		}
	}
	return noLink{rate: math.NaN(), where: "no path without a link", serverCPU: math.NaN()}
}

// serverCPU is the mean CPUs the server's processes kept busy over a
// combination's runs; NaN when unknown.
func (a *analysis) serverCPU(exp, cost, net string) float64 {
	s := a.sum(exp, cost, net)
	if s == nil {
		return math.NaN()
	}
	return study.ServerCPU(s)
}

func usDur(us float64) (d time.Duration) { return time.Duration(us * 1e3) }

// linkLabel is a category of the link axis: the profile and its RTT.
func (a *analysis) linkLabel(net string) string {
	for _, s := range a.rd.Summaries {
		l := study.LinkOf(s.Results[0])
		if l.Profile != net {
			continue
		}
		switch l.Mode {
		case "unix":
			return "unix socket"
		case "direct":
			return "direct TCP"
		}
		return fmt.Sprintf("%s (%s)", net, units.FormatDuration(time.Duration(l.RTTSeconds*1e9)))
	}
	return net
}

func (a *analysis) categories() []string {
	var out []string
	for _, n := range a.links {
		out = append(out, a.linkLabel(n))
	}
	return out
}
