package readahead

import (
	"fmt"
	"math"
	"strings"

	"github.com/dbrig/dbrig/internal/report"
	"github.com/dbrig/dbrig/internal/study"
	"github.com/dbrig/dbrig/internal/workload"
	"github.com/dbrig/dbrig/internal/workload/readahead"
)

// The judges' tolerances, chosen before any measurement and said in each
// verdict.
const (
	// ratioFactor: a ratio (without read-ahead over with) reproduces the
	// seed's when within this factor of it either way.
	ratioFactor = 1.5
	// modelTolerance: a scan's time within 25 % of bytes / throughput
	// (the seed's own: 80 s and 210 s against 80 s and 200 s).
	modelTolerance = 0.25
)

// Judges decide the seed's findings, by their ids in read-ahead.toml, on
// each engine's comparison apart.
func Judges() map[string]study.Judge {
	each := func(judge func(c comparison, p study.Published) report.Finding) study.Judge {
		return func(rd *study.RunData, p study.Published) report.Finding {
			cs := comparisons(rd)
			if len(cs) == 0 {
				return study.NotMeasured(p, "No point was measured."+skippedWhy(rd))
			}
			return study.JudgeEach(p, cs, labelOf, func(c comparison) report.Finding {
				if why := c.incomplete(); why != "" {
					return study.NotMeasured(p, why)
				}
				f := study.Unlike(judge(c, p), c.warm())
				f.Spread = rd.Spread("seconds", c.with.Stats["seconds"], c.without.Stats["seconds"])
				return f
			})
		}
	}
	return map[string]study.Judge{
		"scan-time":  each(judgeScanTime),
		"read-size":  each(judgeReadSize),
		"throughput": each(judgeThroughput),
		"model":      each(judgeModel),
	}
}

// skippedWhy gives the reason points were skipped (not root, no loop
// devices, a target), when they were.
func skippedWhy(rd *study.RunData) string {
	for _, r := range rd.Latest() {
		if r.Skipped != "" {
			return " Skipped: " + r.Skipped
		}
	}
	return ""
}

// comparison is one engine's scans with and without read-ahead.
type comparison struct {
	label         string
	engine        string
	with, without *study.Summary
	// others are further settings the run measured (a size of read-ahead).
	others []*study.Summary
	// discard: the study's rule drops each setting's first run.
	discard bool
}

func labelOf(c comparison) string { return c.label }

func (c comparison) incomplete() string {
	switch {
	case c.with == nil && c.without == nil:
		return "Neither the default read-ahead nor the minimal was measured."
	case c.with == nil:
		return "The scan with the default read-ahead was not measured."
	case c.without == nil:
		return "The scan without read-ahead (minimal or off) was not measured."
	}
	return ""
}

// warm says when a scan was not cold, which the seed's were (DBCC
// DROPCLEANBUFFERS before each).
func (c comparison) warm() string {
	var parts []string
	for _, s := range []*study.Summary{c.with, c.without} {
		if v := s.Mean("resident_before"); v > 0 {
			parts = append(parts, fmt.Sprintf("with read-ahead %s, %.0f pages of the table were in the OS cache when the scan started", s.Params.String("read_ahead"), v))
		}
		if p, t := s.Mean("pages_read"), s.Mean("table_bytes"); t > 0 && p > 0 && p*pageBytes(c.engine) < 0.9*t {
			parts = append(parts, fmt.Sprintf("with read-ahead %s, the server read only %.0f of the table's pages", s.Params.String("read_ahead"), p))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return "Not every scan was cold (" + strings.Join(parts, "; ") + "), as the seed's were."
}

func pageBytes(engineName string) float64 {
	if engineName == "mariadb" {
		return 16384
	}
	return 8192
}

func (c comparison) slowdown() float64 { return c.without.Mean("seconds") / c.with.Mean("seconds") }

// comparisons sets each engine's scans (and each table size's, when a run
// has several) with and without read-ahead, in the order the run measured
// them.
func comparisons(rd *study.RunData) []comparison {
	var out []comparison
	for _, g := range rd.EngineGroups() {
		c := comparison{label: g.Label, engine: g.Engine, discard: rd.Plan.Repeat.DiscardFirst}
		for _, s := range g.Summaries {
			c.add(s)
		}
		out = append(out, c)
	}
	return out
}

// add puts a setting's scans in their place: the default read-ahead is
// with, the last minimal (else the first off) without, any other beside.
func (c *comparison) add(s *study.Summary) {
	switch s.Params.String("read_ahead") {
	case readahead.Default:
		c.with = s
	case readahead.Minimal:
		if c.without != nil {
			c.others = append(c.others, c.without)
		}
		c.without = s
	case readahead.Off:
		if c.without == nil {
			c.without = s
		} else {
			c.others = append(c.others, s)
		}
	default:
		c.others = append(c.others, s)
	}
}

func mbs(v float64) string { return fmt.Sprintf("%.0f MB/s", v) }

func secs(v float64) string { return study.FormatSeconds(v) }

// setting names a point's read-ahead for people.
func setting(s *study.Summary) string {
	ra := s.Params.String("read_ahead")
	kb := s.Mean("read_ahead_kb")
	switch {
	case s.Stats["engine_read_ahead_threshold"].Kept > 0:
		th := s.Mean("engine_read_ahead_threshold")
		if th == 0 {
			return fmt.Sprintf("%s (device %.0f KiB, InnoDB's read-ahead off)", ra, kb)
		}
		return fmt.Sprintf("%s (device %.0f KiB, InnoDB's read-ahead at %.0f pages)", ra, kb, th)
	}
	return fmt.Sprintf("%s (%.0f KiB)", ra, kb)
}

func judgeScanTime(c comparison, p study.Published) report.Finding {
	want := p.Figures["without_s"] / p.Figures["with_s"]
	if !(want > 0) {
		return study.NotMeasured(p, "The study gives no published times (figures with_s and without_s) to compare with.")
	}
	got := c.slowdown()
	f := report.Finding{
		Published: p.Finding,
		Measured: fmt.Sprintf("%s with read-ahead %s, %s with %s: %s as long",
			secs(c.with.Mean("seconds")), setting(c.with), secs(c.without.Mean("seconds")), setting(c.without), study.FormatTimes(got)),
		Model: fmt.Sprintf("%s and %s: %s (%s)",
			secs(modelSeconds(c.with, c.discard)), secs(modelSeconds(c.without, c.discard)), modelWords(c.with),
			study.FormatTimes(modelSeconds(c.without, c.discard)/modelSeconds(c.with, c.discard))),
	}
	switch {
	case study.Within(got, want, ratioFactor):
		f.Verdict = report.Reproduced
		f.Why = fmt.Sprintf("Without read-ahead the cold scan took %s as long, within a factor %g of the seed's %s (210 s against 80 s).", study.FormatTimes(got), ratioFactor, study.FormatTimes(want))
	default:
		f.Verdict = report.Differs
		f.Why = fmt.Sprintf("Without read-ahead the cold scan took %s as long where the seed's took %s (not within a factor %g): %s",
			study.FormatTimes(got), study.FormatTimes(want), ratioFactor, readsWhy(c))
	}
	return f
}

// readsWhy explains a difference by the device's reads.
func readsWhy(c comparison) string {
	return fmt.Sprintf("the device read %s a read at %s (%.1f in flight) with read-ahead, %s at %s (%.1f in flight) without.",
		readahead.FormatReadSize(c.with.Mean("bytes_per_read")), mbs(c.with.Mean("mb_per_s")), c.with.Mean("queue_depth"),
		readahead.FormatReadSize(c.without.Mean("bytes_per_read")), mbs(c.without.Mean("mb_per_s")), c.without.Mean("queue_depth"))
}

func judgeReadSize(c comparison, p study.Published) report.Finding {
	wantWith, wantWithout := p.Figures["with_kb"]*1024, p.Figures["without_kb"]*1024
	if wantWith <= 0 || wantWithout <= 0 {
		return study.NotMeasured(p, "The study gives no published read sizes (figures with_kb and without_kb) to compare with.")
	}
	with, without := c.with.Mean("bytes_per_read"), c.without.Mean("bytes_per_read")
	f := report.Finding{
		Published: p.Finding,
		Measured:  fmt.Sprintf("%s a read with read-ahead %s, %s with %s", readahead.FormatReadSize(with), setting(c.with), readahead.FormatReadSize(without), setting(c.without)),
		Model:     fmt.Sprintf("the device's read-ahead bounds a read: %.0f KiB and %.0f KiB", c.with.Mean("read_ahead_kb"), c.without.Mean("read_ahead_kb")),
	}
	if c.engine == "mariadb" {
		f.Model = "InnoDB reads its 16 KiB pages with O_DIRECT, past the OS's read-ahead; its own read-ahead reads a whole extent's pages at once, each a read of its own"
	}
	switch {
	case with >= wantWith && without <= 2*wantWithout:
		f.Verdict = report.Reproduced
		f.Why = fmt.Sprintf("With read-ahead the reads averaged at least the seed's %s; without, about a page each (at most twice the seed's %s).", readahead.FormatReadSize(wantWith), readahead.FormatReadSize(wantWithout))
	case with < wantWith:
		f.Verdict = report.Differs
		f.Why = fmt.Sprintf("With read-ahead the reads averaged %s, under the seed's %s: %s", readahead.FormatReadSize(with), readahead.FormatReadSize(wantWith), sizeWhy(c))
	default:
		f.Verdict = report.Differs
		f.Why = fmt.Sprintf("Without read-ahead the reads averaged %s, more than twice the seed's %s.", readahead.FormatReadSize(without), readahead.FormatReadSize(wantWithout))
	}
	return f
}

func sizeWhy(c comparison) string {
	if c.engine == "mariadb" {
		return fmt.Sprintf("InnoDB's read-ahead does not make reads larger: it issues a read per 16 KiB page, many at once (%.1f in flight against %.1f without it).",
			c.with.Mean("queue_depth"), c.without.Mean("queue_depth"))
	}
	return fmt.Sprintf("the device's read-ahead was %.0f KiB.", c.with.Mean("read_ahead_kb"))
}

func judgeThroughput(c comparison, p study.Published) report.Finding {
	want := p.Figures["with_mb_s"] / p.Figures["without_mb_s"]
	if !(want > 0) {
		return study.NotMeasured(p, "The study gives no published throughputs (figures with_mb_s and without_mb_s) to compare with.")
	}
	got := c.with.Mean("mb_per_s") / c.without.Mean("mb_per_s")
	f := report.Finding{
		Published: p.Finding,
		Measured: fmt.Sprintf("%s with read-ahead, %s without: %s",
			mbs(c.with.Mean("mb_per_s")), mbs(c.without.Mean("mb_per_s")), study.FormatTimes(got)),
		Model: fmt.Sprintf("a plain read of the file at the same read sizes: %s (%s a read) and %s (%s a read)",
			mbs(c.with.Mean("device_mb_per_s")), readahead.FormatReadSize(c.with.Mean("device_bytes_per_read")),
			mbs(c.without.Mean("device_mb_per_s")), readahead.FormatReadSize(c.without.Mean("device_bytes_per_read"))),
	}
	if study.Within(got, want, ratioFactor) {
		f.Verdict = report.Reproduced
		f.Why = fmt.Sprintf("Read-ahead raised the throughput %s, within a factor %g of the seed's %s (180-200 MB/s against ~80).", study.FormatTimes(got), ratioFactor, study.FormatTimes(want))
	} else {
		f.Verdict = report.Differs
		f.Why = fmt.Sprintf("Read-ahead raised the throughput %s where the seed's rose %s (not within a factor %g): %s", study.FormatTimes(got), study.FormatTimes(want), ratioFactor, readsWhy(c))
	}
	return f
}

// modelSeconds is the seed's arithmetic for a setting: the mean of its
// kept runs' (readahead.Arithmetic), each from the device's throughput
// measured right after that run's scan (a busy disk's throughput changes
// from run to run, and each scan is set beside its own). It is not the
// prediction stored before the run, which the report's predictions show.
func modelSeconds(s *study.Summary, discardFirst bool) float64 {
	return keptMean(s, discardFirst, func(r workload.Result) (float64, bool) {
		v, ok := readahead.Arithmetic(r).Metrics["seconds"]
		return v, ok && v > 0
	})
}

// keptMean is the mean of a figure over a setting's kept runs that have
// it (NaN when none has).
func keptMean(s *study.Summary, discardFirst bool, figure func(workload.Result) (float64, bool)) float64 {
	runs := s.Results
	if discardFirst && len(runs) > 1 {
		runs = runs[1:]
	}
	var sum float64
	n := 0
	for _, r := range runs {
		if v, ok := figure(r); ok {
			sum += v
			n++
		}
	}
	if n == 0 {
		return math.NaN()
	}
	return sum / float64(n)
}

// throttled is the seed's arithmetic's formula for a setting's last run
// on an emulated disk, from "max(": "" when its instance's disk was not
// throttled.
func throttled(s *study.Summary) string {
	if len(s.Results) == 0 {
		return ""
	}
	f := readahead.Arithmetic(s.Results[len(s.Results)-1]).Formula
	if i := strings.Index(f, "max("); i >= 0 {
		return f[i:]
	}
	return ""
}

// modelTerms are the model's terms for a setting: bytes over the plain
// read's throughput, or the emulated disk's throttle.
func modelTerms(s *study.Summary) string {
	if f := throttled(s); f != "" {
		return f
	}
	return fmt.Sprintf("%.0f MB / %s", s.Mean("bytes_read")/1e6, mbs(s.Mean("device_mb_per_s")))
}

// modelWords says in words what the model sets a scan's time by.
func modelWords(s *study.Summary) string {
	if throttled(s) != "" {
		return "the later of bytes over the emulated disk's bandwidth and reads over its requests a second"
	}
	return "bytes over the device's throughput at each read size"
}

func judgeModel(c comparison, p study.Published) report.Finding {
	var ms, ps, spread []string
	worst, worstSetting := 0.0, ""
	// Each setting's runs give errors from lo to hi; the verdict holds
	// for every run, for none, or for some (within noise).
	verdicts := map[report.Verdict]bool{}
	for _, s := range []*study.Summary{c.with, c.without} {
		model := modelSeconds(s, c.discard)
		off := (s.Mean("seconds") - model) / model
		ms = append(ms, fmt.Sprintf("%s: %s for %.0f MB", setting(s), secs(s.Mean("seconds")), s.Mean("bytes_read")/1e6))
		ps = append(ps, fmt.Sprintf("%s = %s (%+.0f %%)", modelTerms(s), secs(model), 100*off))
		if math.IsNaN(off) || math.Abs(off) > math.Abs(worst) {
			worst, worstSetting = off, s.Params.String("read_ahead")
		}
		lo, hi := study.RunRange(s.Stats["seconds"], c.discard)
		lo, hi = (lo-model)/model, (hi-model)/model
		spread = append(spread, fmt.Sprintf("%s: runs %+.0f %% to %+.0f %%", setting(s), 100*lo, 100*hi))
		verdicts[study.Band(lo, hi, -modelTolerance, modelTolerance)] = true
	}
	f := report.Finding{Published: p.Finding, Measured: strings.Join(ms, "; "), Model: strings.Join(ps, "; "), Spread: strings.Join(spread, "; ")}
	switch {
	case math.IsNaN(worst):
		return study.NotMeasured(p, "The device's throughput was not measured.")
	case verdicts[report.WithinNoise] && !verdicts[report.Differs]:
		f.Verdict = report.WithinNoise
		f.Why = fmt.Sprintf("The runs' errors against the model fall on both sides of ±%.0f %% (%s): two runs of this study could say either.", 100*modelTolerance, strings.Join(spread, "; "))
	case math.Abs(worst) <= modelTolerance && !verdicts[report.Differs]:
		f.Verdict = report.Reproduced
		f.Why = fmt.Sprintf("Both scans took their bytes over the device's throughput at their read size, within %.0f %%: the read size sets the time, as the seed's arithmetic says.", 100*modelTolerance)
	case worst > 0:
		f.Verdict = report.Differs
		f.Why = fmt.Sprintf("With read-ahead %s the scan took %.0f %% longer than its bytes over the device's throughput: the scan did more than wait for the device (the database's own work per page, beyond %.0f %%).", worstSetting, 100*worst, 100*modelTolerance)
	default:
		f.Verdict = report.Differs
		f.Why = fmt.Sprintf("With read-ahead %s the scan took %.0f %% less than its bytes over the plain read's throughput: it had more reads in flight than a plain read at that size (%s).", worstSetting, -100*worst, readsWhy(c))
	}
	return f
}
