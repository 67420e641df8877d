package oltp

import (
	"fmt"
	"time"

	"github.com/dbrig/dbrig/internal/load"
	"github.com/dbrig/dbrig/internal/measure"
	"github.com/dbrig/dbrig/internal/units"
	"github.com/dbrig/dbrig/internal/workload"
)

// percentiles are the latency figures of every transaction type and of all
// of them, by metric suffix.
var percentiles = []struct {
	suffix string
	q      float64 // 0 for the mean, 1 for the maximum
	doc    string
}{
	{"mean_ms", 0, "mean"}, {"p50_ms", 0.50, "median"}, {"p95_ms", 0.95, "95th percentile"},
	{"p99_ms", 0.99, "99th percentile"}, {"p999_ms", 0.999, "99.9th percentile"}, {"max_ms", 1, "maximum"},
}

func metricSpecs() []workload.MetricSpec {
	ms := []workload.MetricSpec{
		{Name: "tps", Unit: workload.PerSecond, Better: workload.Higher, Headline: true,
			Doc: "transactions that succeeded, per second of the measured interval"},
	}
	for _, p := range percentiles {
		spec := workload.MetricSpec{Name: p.suffix, Unit: workload.Milliseconds, Better: workload.Lower, Headline: p.suffix == "p99_ms",
			Doc: "response time of every transaction, " + p.doc + " (from the intended start in an open loop)"}
		if spec.Headline {
			spec.Unmodelled = p99Unmodelled
		}
		ms = append(ms, spec)
	}
	ms = append(ms,
		workload.MetricSpec{Name: "errors", Unit: workload.Count, Better: workload.Lower, Headline: true,
			Unmodelled: "a count of failures: no model of the load predicts one", Doc: "transactions that failed, every class"},
		workload.MetricSpec{Name: "error_pct", Unit: workload.Percent, Better: workload.Lower, Doc: "failed transactions in percent of those that ended"},
	)
	for _, c := range load.ErrorClasses() {
		ms = append(ms, workload.MetricSpec{Name: "errors_" + c.String(), Unit: workload.Count, Better: workload.Lower, Doc: "transactions that failed with a " + c.String() + " error"})
	}
	ms = append(ms,
		workload.MetricSpec{Name: "over_limit", Unit: workload.Count, Better: workload.Lower, Doc: "transactions slower than tx_limit (30 s unless set), failed or not"},
		workload.MetricSpec{Name: "users", Unit: workload.Count, Doc: "virtual users (workers in an open loop)"},
		workload.MetricSpec{Name: "rate", Unit: workload.PerSecond, Doc: "open loop: the transactions arriving per second"},
		workload.MetricSpec{Name: "measured_s", Unit: workload.Seconds, Doc: "the measured interval's length"},
		workload.MetricSpec{Name: "late", Unit: workload.Count, Better: workload.Lower, Doc: "transactions that started more than 1 ms after their intended start"},
		workload.MetricSpec{Name: "start_lag_p99_ms", Unit: workload.Milliseconds, Better: workload.Lower, Doc: "how late transactions started against their schedule, 99th percentile"},
		workload.MetricSpec{Name: "not_started", Unit: workload.Count, Better: workload.Lower, Doc: "open loop: arrivals over the in-flight bound, not started (sustained overload)"},
		workload.MetricSpec{Name: "service_p50_ms", Unit: workload.Milliseconds, Better: workload.Lower, Doc: "open loop: response time from the actual start, median"},
		workload.MetricSpec{Name: "service_p99_ms", Unit: workload.Milliseconds, Better: workload.Lower, Doc: "open loop: response time from the actual start, 99th percentile"},
		workload.MetricSpec{Name: "warm_up_tx", Unit: workload.Count, Doc: "transactions that succeeded in the warm-up, discarded from the figures but carried by the link"},
		workload.MetricSpec{Name: "after_end", Unit: workload.Count, Doc: "transactions that finished after the measured interval, in the grace period"},
		workload.MetricSpec{Name: "cancelled_at_stop", Unit: workload.Count, Doc: "transactions still running when the grace period ended, cancelled"},
		workload.MetricSpec{Name: "users_without_slot", Unit: workload.Count, Better: workload.Lower, Doc: "users that found every connection slot of the server taken when the run started"},
	)
	ms = append(ms, load.ClientMetricSpecs()...)
	for t := range numTxTypes {
		name := t.metricName()
		ms = append(ms, workload.MetricSpec{Name: name + "_tps", Unit: workload.PerSecond, Better: workload.Higher, Doc: t.String() + " transactions that succeeded, per second"})
		for _, p := range percentiles {
			ms = append(ms, workload.MetricSpec{Name: name + "_" + p.suffix, Unit: workload.Milliseconds, Better: workload.Lower, Doc: t.String() + " response time, " + p.doc})
		}
		ms = append(ms, workload.MetricSpec{Name: name + "_errors", Unit: workload.Count, Better: workload.Lower, Doc: t.String() + " transactions that failed"})
	}
	return ms
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// latencyMetrics adds a distribution's mean, percentiles and maximum.
func latencyMetrics(m map[string]float64, prefix string, h *measure.Histogram) {
	if h == nil || h.Count() == 0 {
		return
	}
	for _, p := range percentiles {
		var v time.Duration
		switch p.q {
		case 0:
			v = h.Mean()
		case 1:
			v = h.Max()
		default:
			v = h.Quantile(p.q)
		}
		m[prefix+p.suffix] = ms(v)
	}
}

// measurement turns a run's result into a point's measurement: the
// figures, every distribution, and the per-second series of the measured
// interval.
func measurement(res *load.Result, mix Mix) workload.Measurement {
	m := workload.Measurement{Metrics: map[string]float64{}, Series: map[string][]float64{},
		Histograms: map[string]*measure.Histogram{}, SeriesInterval: 1}
	o := res.Overall
	m.Metrics["tps"] = o.TPS
	latencyMetrics(m.Metrics, "", o.Latency)
	m.Metrics["errors"] = float64(o.Errors.Total())
	if ended := o.Ops + o.Errors.Total(); ended > 0 {
		m.Metrics["error_pct"] = 100 * float64(o.Errors.Total()) / float64(ended)
	}
	for _, c := range load.ErrorClasses() {
		m.Metrics["errors_"+c.String()] = float64(o.Errors[c])
	}
	m.Metrics["over_limit"] = float64(o.OverLimit)
	m.Metrics["users"] = float64(res.Users)
	m.Metrics["measured_s"] = res.Measured.Seconds()
	m.Metrics["warm_up_tx"] = float64(res.WarmUpOps)
	m.Metrics["after_end"] = float64(res.AfterEnd.Count())
	m.Metrics["cancelled_at_stop"] = float64(res.CancelledAtStop)
	m.Histograms["latency"] = o.Latency
	if res.StartLag.Count() > 0 {
		m.Metrics["late"] = float64(res.Late)
		m.Metrics["start_lag_p99_ms"] = ms(res.StartLag.Quantile(0.99))
		m.Histograms["start_lag"] = res.StartLag
	}
	if res.Mode == "open" {
		m.Metrics["rate"] = res.Rate
		m.Metrics["not_started"] = float64(res.NotStarted + res.NotStartedAtEnd)
		if o.Service != nil && o.Service.Count() > 0 {
			m.Metrics["service_p50_ms"] = ms(o.Service.Quantile(0.5))
			m.Metrics["service_p99_ms"] = ms(o.Service.Quantile(0.99))
			m.Histograms["service"] = o.Service
		}
	}
	types := mix.types()
	for i, t := range res.Types {
		name := types[i].metricName()
		m.Metrics[name+"_tps"] = t.TPS
		m.Metrics[name+"_errors"] = float64(t.Errors.Total())
		latencyMetrics(m.Metrics, name+"_", t.Latency)
		if len(types) > 1 {
			m.Histograms["latency/"+t.Name] = t.Latency
		}
	}

	for _, iv := range res.Series {
		if iv.Phase != load.Measured || iv.Length < time.Second/10 {
			continue // a sliver between the last tick and the stop: its transactions are in the totals
		}
		m.Series["tps"] = append(m.Series["tps"], iv.Overall.TPS(iv.Length))
		m.Series["p50_ms"] = append(m.Series["p50_ms"], ms(iv.Overall.P50))
		m.Series["p99_ms"] = append(m.Series["p99_ms"], ms(iv.Overall.P99))
		m.Series["max_ms"] = append(m.Series["max_ms"], ms(iv.Overall.Max))
		m.Series["errors"] = append(m.Series["errors"], float64(iv.Overall.Errors.Total()))
		if len(types) > 1 {
			for j, ts := range iv.Types {
				key := types[j].metricName() + "_tps"
				m.Series[key] = append(m.Series[key], ts.TPS(iv.Length))
			}
		}
	}
	m.Notes = append(m.Notes, resultNotes(res)...)
	if warn := load.ClientMetrics(res, m.Metrics); warn != "" {
		m.Warnings = append(m.Warnings, warn)
	}
	return m
}

// resultNotes say what the driver could not do and what ended outside the
// measured interval.
func resultNotes(res *load.Result) []string {
	var notes []string
	if e := res.Overall.Errors; e.Total() > 0 {
		notes = append(notes, "errors: "+e.String())
	}
	if res.Overloaded {
		notes = append(notes, fmt.Sprintf("sustained overload: %d arrivals over the in-flight bound of %d were not started", res.NotStarted, res.MaxInFlight))
	}
	if res.NotStartedAtEnd > 0 {
		notes = append(notes, fmt.Sprintf("%d arrivals were still waiting for a user at the end", res.NotStartedAtEnd))
	}
	if n := res.Overall.OverLimit; n > 0 {
		notes = append(notes, fmt.Sprintf("%d transactions took longer than %s", n, units.FormatDuration(res.TxLimit)))
	}
	if n := res.AfterEnd.Count(); n > 0 {
		notes = append(notes, fmt.Sprintf("%d transactions finished after the end (max %s)", n, units.FormatDuration(res.AfterEnd.Max())))
	}
	if res.CancelledAtStop > 0 {
		notes = append(notes, fmt.Sprintf("%d transactions were cancelled at the stop", res.CancelledAtStop))
	}
	return notes
}
