package reporttest

import (
	"fmt"
	"math"
	"time"

	"github.com/dbrig/dbrig/internal/report"
)

// SampleDoc is a fixed report for tests with every part filled: findings of each
// verdict (one with markup that must not inject), charts of every series
// style on linear, log and categorical axes, a section, a long table of
// points, failures, environment and limits.
func SampleDoc() *report.Doc {
	return &report.Doc{
		Title:       "Row-by-row processing across a network",
		Question:    "How much do network latency, link speed and the client's own speed cost work that handles rows one at a time, compared with set-based work on the server?",
		Source:      "Network latency and row-by-row (RBAR) processing, Rubén Garrigós (SolidQ), seed 004_b51b6fa406aa2802.txt",
		Findings:    sampleFindings(),
		Charts:      sampleCharts(),
		Sections:    sampleSections(),
		Points:      samplePoints(),
		Failures:    []string{"experiment=client-cursor rows=1000000 link=rtt-77ms: context deadline exceeded after 600 s"},
		Skipped:     []string{"net=unix #1: instance \"db\" is the user's server reached over TCP"},
		Counts:      report.Counts{Planned: 12, Combinations: 4, Runs: 3, Measured: 9, Failed: 1, Skipped: 1, Missing: 1},
		Environment: sampleEnvironment(),
		Limits: []string{
			"One 2-core machine: the client, the emulated link and PostgreSQL share two cores.",
			"No physical machine to compare with a virtual one.",
		},
		Command:   "dbrig run rbar-latency --full --out runs/rbar",
		Generated: time.Date(2025, 3, 14, 9, 26, 53, 0, time.UTC),
	}
}

func sampleFindings() []report.Finding {
	return []report.Finding{
		{
			Published: "Loops and cursors run on the server are set by the processor, not the network.",
			Measured:  "server-loop: 0.41 s on the unix socket, 0.49 s across 77 ms (+0.078 s)",
			Model:     "t = rows × s_server + one RTT",
			Verdict:   report.Reproduced,
			Why:       "The whole loop runs inside the server; the link costs one round trip.",
		},
		{
			Published: "Each row pays the line's latency plus the client's own time | per row.",
			Measured:  "157 s for 2000 rows at 77 ms RTT",
			Model:     "t = n·(RTT + s_client) = 154 s",
			Verdict:   report.Differs,
			Why:       "The emulated link adds 1.5 ms per round trip on this 2-core machine: the proxy shares the cores with PostgreSQL.",
			Spread:    "3 runs: 152-161 s",
		},
		{
			Published: "Virtual machines cost 5-10 % <script>alert(1)</script> on the loop.",
			Measured:  "-",
			Model:     "-",
			Verdict:   report.NotMeasured,
			Why:       "Needs a physical and a virtual machine; this run has one (kvm).",
		},
	}
}

// sampleRowSeries is the per-row chart's runs (spread ±8 %), their means and
// the model, at round-trip times from a unix socket's to a continent's.
func sampleRowSeries() (runs, mean, model []report.XY) {
	rtts := []float64{0.05, 1, 10, 77}
	for i, rtt := range rtts {
		m := 0.4 + 2*(rtt+0.15*math.Sqrt(rtt)) // seconds for 2000 rows, one round trip each
		for r := range 3 {
			v := m * (1 + 0.08*float64(r-1)*float64(i%2*2-1))
			runs = append(runs, report.XY{X: rtt, Y: v, Label: fmt.Sprintf("rtt %g ms, run %d", rtt, r+1)})
		}
		mean = append(mean, report.XY{X: rtt, Y: m, Label: fmt.Sprintf("rtt %g ms, trimmed mean", rtt)})
		model = append(model, report.XY{X: rtt, Y: 0.4 + 2*rtt, Label: "t = n·(RTT + s)"})
	}
	return runs, mean, model
}

func sampleThroughput() []report.XY {
	var tput []report.XY
	for s := range 120 {
		tput = append(tput, report.XY{X: float64(s) / 2, Y: 5200 + 400*math.Sin(float64(s)/9) + float64(s%7)*30})
	}
	return tput
}

func sampleCharts() []report.Chart {
	runs, mean, model := sampleRowSeries()
	tput := sampleThroughput()
	return []report.Chart{
		{
			ID: "per-row", Title: "Row-by-row time against round-trip time",
			Subtitle: "client-loop, 2000 rows, fast client",
			XLabel:   "round-trip time (ms)", YLabel: "time (s)", XLog: true, YLog: true,
			Series: []report.Series{
				{Name: "runs", Style: report.Points, Points: runs},
				{Name: "trimmed mean", Style: report.Line, Points: mean},
				{Name: "model", Style: report.Model, Points: model},
			},
			Note: "Each dot is one run; the dashed line is the model t = n·(RTT + s).",
		},
		{
			ID: "experiments", Title: "Time per experiment across 77 ms",
			XLabel: "experiment", YLabel: "time (s)",
			XCategories: []string{"server-loop", "server-cursor", "client-loop", "client-stream"},
			Series: []report.Series{
				{Name: "measured", Style: report.Bars, Points: []report.XY{{X: 0, Y: 0.49}, {X: 1, Y: 0.52}, {X: 2, Y: 157}, {X: 3, Y: 1.9}}},
				{Name: "model", Style: report.Model, Points: []report.XY{{X: 0, Y: 0.48}, {X: 1, Y: 0.5}, {X: 2, Y: 154}, {X: 3, Y: 1.7}}},
			},
		},
		{
			ID: "throughput", Title: "Rows per second during the stream",
			XLabel: "time (s)", YLabel: "rows/s",
			Series: []report.Series{{Name: "rows/s <b>", Style: report.Area, Points: tput}},
			Note:   "Sampled every 0.5 s.",
		},
	}
}

func sampleSections() []report.Section {
	return []report.Section{{
		Title: "Experiments",
		Text:  "Each experiment moves the same rows.\n\nThe client-side ones pay the link per row.",
		Tables: []report.Table{{
			Title:   "Experiments at 77 ms",
			Columns: []string{"experiment", "time", "model", "error"},
			Rows: [][]string{
				{"server-loop", "0.49 s", "0.48 s", "+2.1%"},
				{"client-loop", "157 s", "154 s", "+1.9%"},
				{"a | b", "-", "-", "-"},
			},
		}},
	}}
}

// samplePoints is long enough that a reader must collapse or scroll it.
func samplePoints() report.Table {
	points := report.Table{
		Title:   "Every point",
		Note:    "Each combination ran 3 times; the mean is trimmed. Error = (measured - model) / model.",
		Columns: []string{"point", "link", "metric", "runs", "mean", "spread (sd)", "model", "error"},
	}
	for i := range 48 {
		points.Rows = append(points.Rows, []string{
			fmt.Sprintf("experiment=client-loop rows=%d", 1000*(i+1)), "rtt-77ms", "seconds",
			fmt.Sprintf("%.2f s, %.2f s, %.2f s", 1.5+float64(i), 1.6+float64(i), 1.4+float64(i)),
			fmt.Sprintf("%.2f s", 1.5+float64(i)), "0.08 s", fmt.Sprintf("%.2f s", 1.45+float64(i)),
			fmt.Sprintf("%+.1f%%", 3.4-float64(i)/10),
		})
	}
	return points
}

func sampleEnvironment() [][2]string {
	return [][2]string{
		{"CPU", "AMD EPYC 7B13 (2 cores)"},
		{"memory", "24 GiB"},
		{"kernel", "Linux 6.1.0-18-amd64"},
		{"virtualization", "kvm"},
		{"PostgreSQL", "16.4 (Debian 16.4-1.pgdg120+1)"},
		{"dbrig", "v0.1.0 (commit abc1234)"},
	}
}
