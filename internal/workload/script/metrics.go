package script

import (
	"fmt"
	"strconv"
	"time"

	"github.com/dbrig/dbrig/internal/load"
	"github.com/dbrig/dbrig/internal/measure"
	"github.com/dbrig/dbrig/internal/units"
	"github.com/dbrig/dbrig/internal/workload"
)

// quantiles are the latency figures kept of every distribution, by
// metric suffix: 0 is the mean, 1 the maximum.
var quantiles = []struct {
	suffix string
	q      float64
}{{"mean_ms", 0}, {"p50_ms", 0.5}, {"p95_ms", 0.95}, {"p99_ms", 0.99}, {"p999_ms", 0.999}, {"max_ms", 1}}

func metricSpecs() []workload.MetricSpec {
	m := func(name string, unit workload.Unit, better workload.Better, doc string) workload.MetricSpec {
		return workload.MetricSpec{Name: name, Unit: unit, Better: better, Doc: doc}
	}
	specs := []workload.MetricSpec{
		{Name: "tps", Unit: workload.PerSecond, Better: workload.Higher, Headline: true,
			Doc: "transactions (runs of a script) that succeeded, per second of the measured interval"},
	}
	for _, q := range quantiles {
		specs = append(specs, workload.MetricSpec{Name: q.suffix, Unit: workload.Milliseconds, Better: workload.Lower, Headline: q.suffix == "p99_ms",
			Doc: "response time of the transactions that succeeded, retries included (from the intended start in an open loop): " + q.suffix})
	}
	specs = append(specs,
		workload.MetricSpec{Name: "errors", Unit: workload.Count, Better: workload.Lower, Headline: true,
			Unmodelled: "a count of failures: no model of the load predicts one", Doc: "transactions that failed, after their last try"},
		m("error_pct", workload.Percent, workload.Lower, "failed transactions in percent of those that ended"),
		m("retried", workload.Count, workload.Lower, "transactions tried more than once after a serialization failure or a deadlock, succeeded or not (pgbench's \"retried\")"),
		m("retries", workload.Count, workload.Lower, "tries after the first, every transaction (pgbench's \"retries\")"),
		m("round_trips_per_tx", workload.Count, workload.Lower, "turns of the conversation a transaction took on the wire (a write after a read): one per statement, one per pipeline"),
		m("bytes_out_per_tx", workload.Bytes, workload.Lower, "bytes a transaction sent, on the wire"),
		m("bytes_in_per_tx", workload.Bytes, workload.Lower, "bytes a transaction received, on the wire"),
		m("wait_ms_per_tx", workload.Milliseconds, workload.Lower, "time a transaction waited for the server: the round trips and the server's work"),
		m("client_ms_per_tx", workload.Milliseconds, workload.Lower, "time a transaction spent in the client, neither waiting for the server nor asleep"),
	)
	for _, c := range load.ErrorClasses() {
		specs = append(specs, m("errors_"+c.String(), workload.Count, workload.Lower, "transactions that failed with a "+c.String()+" error"))
	}
	return append(append(specs,
		m("over_limit", workload.Count, workload.Lower, "transactions slower than tx_limit, failed or not"),
		m("users", workload.Count, workload.Neither, "virtual users (workers in an open loop)"),
		m("rate", workload.PerSecond, workload.Neither, "open loop: the transactions arriving per second"),
		m("measured_s", workload.Seconds, workload.Neither, "the measured interval's length"),
		m("late", workload.Count, workload.Lower, "transactions that started more than 1 ms after their intended start"),
		m("not_started", workload.Count, workload.Lower, "open loop: arrivals over the in-flight bound, not started"),
		m("after_end", workload.Count, workload.Neither, "transactions that finished after the measured interval"),
		m("cancelled_at_stop", workload.Count, workload.Neither, "transactions still running when the grace period ended"),
	), load.ClientMetricSpecs()...)
}

func msOf(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// latencyMetrics adds a distribution's mean, percentiles and maximum.
func latencyMetrics(m map[string]float64, prefix string, h *measure.Histogram) {
	if h == nil || h.Count() == 0 {
		return
	}
	for _, q := range quantiles {
		switch q.q {
		case 0:
			m[prefix+q.suffix] = msOf(h.Mean())
		case 1:
			m[prefix+q.suffix] = msOf(h.Max())
		default:
			m[prefix+q.suffix] = msOf(h.Quantile(q.q))
		}
	}
}

// measurement is a point's figures: the load's, and per script and per
// statement what pgbench reports and what a link's model needs (round
// trips, bytes, where the time went).
func measurement(res *load.Result, rep Report) workload.Measurement {
	m := workload.Measurement{Metrics: map[string]float64{}, Series: map[string][]float64{},
		Histograms: map[string]*measure.Histogram{}, SeriesInterval: 1}
	loadMetrics(m, res)
	if warn := load.ClientMetrics(res, m.Metrics); warn != "" {
		m.Warnings = append(m.Warnings, warn)
	}
	var ok, retried, retries int64
	var trips, out, in float64
	var wait, client time.Duration
	for _, s := range rep.Scripts {
		scriptMetrics(m, s)
		n := float64(s.Ops)
		ok += s.Ops
		retried += s.Retried
		retries += s.Retries
		trips, out, in = trips+s.RoundTrips*n, out+s.BytesOut*n, in+s.BytesIn*n
		wait += time.Duration(float64(s.Wait) * n)
		client += time.Duration(float64(s.Client) * n)
	}
	m.Metrics["retried"], m.Metrics["retries"] = float64(retried), float64(retries)
	if ok > 0 {
		n := float64(ok)
		m.Metrics["round_trips_per_tx"] = trips / n
		m.Metrics["bytes_out_per_tx"], m.Metrics["bytes_in_per_tx"] = out/n, in/n
		m.Metrics["wait_ms_per_tx"], m.Metrics["client_ms_per_tx"] = msOf(wait)/n, msOf(client)/n
	}
	if retries > 0 {
		m.Notes = append(m.Notes, fmt.Sprintf("%d transactions retried after a serialization failure or a deadlock, %d retries", retried, retries))
	}
	return m
}

// scriptMetrics adds one script's figures and its statements', prefixed
// with the script's name.
func scriptMetrics(m workload.Measurement, s ScriptReport) {
	p := s.Metric + "_"
	m.Metrics[p+"tps"] = s.TPS
	m.Metrics[p+"errors"] = float64(s.Failed.Total())
	latencyMetrics(m.Metrics, p, s.Latency)
	m.Metrics[p+"retried"], m.Metrics[p+"retries"] = float64(s.Retried), float64(s.Retries)
	if s.Ops > 0 {
		m.Metrics[p+"round_trips_per_tx"] = s.RoundTrips
		m.Metrics[p+"bytes_out_per_tx"], m.Metrics[p+"bytes_in_per_tx"] = s.BytesOut, s.BytesIn
		m.Metrics[p+"wait_ms_per_tx"], m.Metrics[p+"client_ms_per_tx"] = msOf(s.Wait), msOf(s.Client)
	}
	for _, c := range s.Commands {
		cp := p + "line" + strconv.Itoa(c.Line) + "_"
		if c.Latency != nil && c.Latency.Count() > 0 {
			m.Metrics[cp+"mean_ms"] = msOf(c.Latency.Mean())
			m.Metrics[cp+"p99_ms"] = msOf(c.Latency.Quantile(0.99))
			m.Histograms["statement/"+s.Name+":"+strconv.Itoa(c.Line)] = c.Latency
		}
		if c.Failures > 0 || c.Retries > 0 {
			m.Metrics[cp+"failures"], m.Metrics[cp+"retries"] = float64(c.Failures), float64(c.Retries)
		}
	}
}

// loadMetrics adds what the load layer measured: throughput, response
// times and errors overall and per script, the open loop's figures, and
// the measured interval second by second.
func loadMetrics(m workload.Measurement, res *load.Result) {
	o := res.Overall
	m.Metrics["tps"] = o.TPS
	latencyMetrics(m.Metrics, "", o.Latency)
	m.Histograms["latency"] = o.Latency
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
	m.Metrics["after_end"] = float64(res.AfterEnd.Count())
	m.Metrics["cancelled_at_stop"] = float64(res.CancelledAtStop)
	m.Metrics["late"] = float64(res.Late)
	if res.Mode == "open" {
		m.Metrics["rate"] = res.Rate
		m.Metrics["not_started"] = float64(res.NotStarted + res.NotStartedAtEnd)
	}
	for _, t := range res.Types {
		if len(res.Types) > 1 {
			m.Histograms["latency/"+t.Name] = t.Latency
		}
	}
	for _, iv := range res.Series {
		if iv.Phase != load.Measured || iv.Length < time.Second/10 {
			continue // a sliver before the stop: its transactions are in the totals
		}
		m.Series["tps"] = append(m.Series["tps"], iv.Overall.TPS(iv.Length))
		m.Series["p99_ms"] = append(m.Series["p99_ms"], msOf(iv.Overall.P99))
		m.Series["errors"] = append(m.Series["errors"], float64(iv.Overall.Errors.Total()))
	}
	if e := o.Errors; e.Total() > 0 {
		m.Notes = append(m.Notes, "errors: "+e.String())
	}
	if n := res.AfterEnd.Count(); n > 0 {
		m.Notes = append(m.Notes, fmt.Sprintf("%d transactions finished after the end (max %s)", n, units.FormatDuration(res.AfterEnd.Max())))
	}
	if res.Overloaded {
		m.Notes = append(m.Notes, fmt.Sprintf("sustained overload: %d arrivals over the in-flight bound of %d were not started", res.NotStarted, res.MaxInFlight))
	}
}
