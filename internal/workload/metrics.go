package workload

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/dbrig/dbrig/internal/units"
)

// Unit is what a metric counts; it decides how the report prints it.
type Unit string

const (
	Seconds       Unit = "s"
	Milliseconds  Unit = "ms"
	Microseconds  Unit = "us"
	BitsPerSecond Unit = "bit/s"
	Bytes         Unit = "B"
	PerSecond     Unit = "/s"
	PerMinute     Unit = "/min"
	Percent       Unit = "%"
	Ratio         Unit = "x"
	Count         Unit = ""
)

// Better says which way a metric improves.
type Better int

const (
	Neither Better = iota // a count or a setting: no direction
	Higher                // throughput, rows per second
	Lower                 // time, latency
)

// MetricSpec declares one metric a workload measures, so that reports,
// progress lines and comparisons print and order it without guessing from
// its name.
type MetricSpec struct {
	Name   string
	Unit   Unit
	Better Better
	// Headline metrics are shown in progress lines and the points table.
	Headline bool
	Doc      string
	// Unmodelled, when set, says why no model predicts a headline metric
	// (a count of failures, a property of the data the model takes): the
	// report's share of figures predicted leaves it out, and says so.
	Unmodelled string
}

// Format prints a value in the metric's unit.
func (m MetricSpec) Format(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "-"
	}
	switch m.Unit {
	case Seconds:
		return units.FormatDuration(time.Duration(v * 1e9))
	case Milliseconds:
		return units.FormatDuration(time.Duration(v * 1e6))
	case Microseconds:
		return units.FormatDuration(time.Duration(v * 1e3))
	case BitsPerSecond:
		return units.Rate(v).String() + "/s"
	case Bytes:
		return units.Size(int64(v)).String()
	case PerSecond:
		return FormatNumber(v) + "/s"
	case PerMinute:
		return FormatNumber(v) + "/min"
	case Percent:
		return fmt.Sprintf("%.1f %%", v)
	case Ratio:
		return fmt.Sprintf("%.2fx", v)
	}
	return FormatNumber(v)
}

// Metric finds a declared metric.
func (k Kind) Metric(name string) (MetricSpec, bool) {
	for _, m := range k.Metrics {
		if m.Name == name {
			return m, true
		}
	}
	return MetricSpec{}, false
}

// FormatNumber prints a figure with three significant digits, whole
// above 100.
func FormatNumber(v float64) string {
	switch a := math.Abs(v); {
	case a >= 1e6:
		return fmt.Sprintf("%.3g", v)
	case a >= 100:
		return fmt.Sprintf("%.0f", v)
	case a >= 1:
		return fmt.Sprintf("%.3g", v)
	}
	return fmt.Sprintf("%.3g", v)
}

// MetricLabel is a metric's name for a line that prints its value with its
// unit: the unit the name carries goes ("p99_ms 4.27ms" would say it
// twice), so p99_ms is "p99", time_ms "time", seconds "time", us_per_row
// "time per row" and throughput_bps "throughput".
func MetricLabel(name string) string {
	if name == "seconds" {
		return "time"
	}
	for _, suffix := range []string{"_ms", "_us", "_bps", "_bytes"} {
		if rest, ok := strings.CutSuffix(name, suffix); ok && rest != "" {
			return rest
		}
	}
	if rest, ok := strings.CutSuffix(name, "_s"); ok && rest != "" && !strings.HasSuffix(rest, "_per") {
		return rest
	}
	for _, prefix := range []string{"us_per_", "ms_per_", "s_per_"} {
		if rest, ok := strings.CutPrefix(name, prefix); ok && rest != "" {
			return "time per " + strings.ReplaceAll(rest, "_", " ")
		}
	}
	return name
}
