package tpchparallel

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"sort"
	"strconv"

	"github.com/dbrig/dbrig/internal/study"
	"github.com/dbrig/dbrig/internal/workload/tpch"
)

// sweep is one degree sweep of a run: the same data and server at every
// degree measured.
type sweep struct {
	engine  string
	sf      float64
	streams int
	levels  []level // by degree
}

// level is one degree of a sweep.
type level struct {
	degree int
	n      float64
	sum    *study.Summary
}

func (l level) mean(metric string) float64 { return l.sum.Mean(metric) }

// analyze groups a run's combinations into degree sweeps, the sweep with
// the most degrees first.
func analyze(rd *study.RunData) []*sweep {
	byKey := map[string]*sweep{}
	var out []*sweep
	for _, sm := range rd.Summaries {
		if len(sm.Results) == 0 {
			continue
		}
		last := sm.Results[len(sm.Results)-1]
		if _, ok := last.Metrics["total_s"]; !ok {
			continue
		}
		key := tpch.SweepKey(last)
		sw, ok := byKey[key]
		if !ok {
			sw = &sweep{engine: last.Instance().Engine, sf: last.Params.Float("scale_factor"), streams: int(last.Params.Int("streams"))}
			byKey[key] = sw
			out = append(out, sw)
		}
		sw.levels = append(sw.levels, level{degree: int(last.Metrics["degree"]), n: tpch.EffectiveProcesses(last), sum: sm})
	}
	for _, sw := range out {
		sort.SliceStable(sw.levels, func(i, j int) bool { return sw.levels[i].degree < sw.levels[j].degree })
	}
	sort.SliceStable(out, func(i, j int) bool { return len(out[i].levels) > len(out[j].levels) })
	return out
}

// serial is the sweep's degree 0, if measured.
func (sw *sweep) serial() (level, bool) {
	if len(sw.levels) > 0 && sw.levels[0].degree == 0 {
		return sw.levels[0], true
	}
	return level{}, false
}

// parallel lists the degrees with more than one process, in order.
func (sw *sweep) parallel() []level {
	var out []level
	for _, l := range sw.levels {
		if l.n > 1 {
			out = append(out, l)
		}
	}
	return out
}

// top is the first degree that reached the most processes.
func (sw *sweep) top() (level, bool) {
	var best level
	found := false
	for _, l := range sw.parallel() {
		if !found || l.n > best.n {
			best, found = l, true
		}
	}
	return best, found
}

// speedup of a metric at a level against the serial degree.
func (sw *sweep) speedup(l level, metric string) float64 {
	s, ok := sw.serial()
	if !ok {
		return math.NaN()
	}
	return s.mean(metric) / l.mean(metric)
}

// fraction is the serial fraction the sweep's measured times give, fitted
// over every degree (NaN when there is no serial degree and another): a
// measurement, as the seed's table is, which the findings judge; each
// point's Amdahl figure is the model, fitted on the other degrees.
func (sw *sweep) fraction(metric string) float64 {
	serial, ok := sw.serial()
	if !ok {
		return math.NaN()
	}
	var ns, times []float64
	for _, l := range sw.levels {
		ns, times = append(ns, l.n), append(times, l.mean(metric))
	}
	if s, ok := tpch.FitAmdahl(ns, times, serial.mean(metric)); ok {
		return s
	}
	return math.NaN()
}

// busy says how much of the host's CPUs other processes took while the
// streams ran (measured on a server dbrig started), or "".
func (sw *sweep) busy() string {
	var sum, cpus float64
	n := 0
	for _, l := range sw.levels {
		if v := l.mean("other_cpus"); !math.IsNaN(v) {
			sum += v
			n++
			cpus = l.mean("host_cpus")
		}
	}
	if n == 0 || sum/float64(n) < 0.1 {
		return ""
	}
	return fmt.Sprintf(" Other processes on this host kept %.1f of its %g CPUs busy on average while the streams ran, CPU time no degree could use.", sum/float64(n), cpus)
}

// queries lists the query numbers the sweep measured.
func (sw *sweep) queries() []int {
	var out []int
	for q := 1; q <= tpch.NumQueries; q++ {
		if len(sw.levels) > 0 && !math.IsNaN(sw.levels[0].mean(tpch.MetricName(q))) {
			out = append(out, q)
		}
	}
	return out
}

// seedTable is the seed's per-query times by MAXDOP, from the study's
// published figures named qNN_maxdopM (ms) and total_maxdopM (s).
type seedTable struct {
	dops   []int                   // 1, 4, 8, 16
	query  map[int]map[int]float64 // query -> MAXDOP -> ms
	totals map[int]float64         // MAXDOP -> s, as published
}

var figureName = regexp.MustCompile(`^(q(\d+)|total)_maxdop(\d+)$`)

func seedOf(spec *study.Spec) (seedTable, bool) {
	t := seedTable{query: map[int]map[int]float64{}, totals: map[int]float64{}}
	for _, p := range spec.Published {
		for k, v := range p.Figures {
			m := figureName.FindStringSubmatch(k)
			if m == nil {
				continue
			}
			dop, _ := strconv.Atoi(m[3])
			if !slices.Contains(t.dops, dop) {
				t.dops = append(t.dops, dop)
			}
			if m[1] == "total" {
				t.totals[dop] = v
				continue
			}
			q, _ := strconv.Atoi(m[2])
			if t.query[q] == nil {
				t.query[q] = map[int]float64{}
			}
			t.query[q][dop] = v
		}
	}
	slices.Sort(t.dops)
	return t, len(t.query) > 0 || len(t.totals) > 0
}

// fit is the seed's serial fraction of one query (0 = the totals).
func (t seedTable) fit(q int) (float64, bool) {
	times := t.query[q]
	if q == 0 {
		times = t.totals
	}
	t1, ok := times[1]
	if !ok {
		return math.NaN(), false
	}
	var ns, ts []float64
	for _, d := range t.dops {
		if v, ok := times[d]; ok {
			ns = append(ns, float64(d))
			ts = append(ts, v)
		}
	}
	return tpch.FitAmdahl(ns, ts, t1)
}

func pct(v float64) string {
	if math.IsNaN(v) {
		return "-"
	}
	return fmt.Sprintf("%.1f %%", 100*v)
}

func ms(v float64) string {
	if math.IsNaN(v) {
		return "-"
	}
	switch {
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	case v >= 10:
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.2f", v)
}

func secs(v float64) string {
	if math.IsNaN(v) {
		return "-"
	}
	if v >= 10 {
		return fmt.Sprintf("%.1f s", v)
	}
	return fmt.Sprintf("%.2f s", v)
}

// levelName says which degree and how many processes.
func levelName(l level) string {
	return fmt.Sprintf("degree %d (n = %g)", l.degree, l.n)
}
