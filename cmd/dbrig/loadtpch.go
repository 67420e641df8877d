package main

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/dbrig/dbrig/internal/study"
	"github.com/dbrig/dbrig/internal/workload"
	"github.com/dbrig/dbrig/internal/workload/tpch"
)

// tpchView shows a power test: each query's time at each degree.
type tpchView struct{}

func newTPCHView(*app, *loadFlags) loadView { return &tpchView{} }

func (v *tpchView) kind(k workload.Kind) workload.Kind { return k }
func (v *tpchView) progress() study.Progress           { return nil }
func (v *tpchView) starting(loadInfo)                  {}

// tpchSummary is what `dbrig load tpch` prints, and with --json its shape.
type tpchSummary struct {
	Dir         string          `json:"dir"`
	HTML        string          `json:"report_html,omitempty"`
	Markdown    string          `json:"report_md,omitempty"`
	Engine      string          `json:"engine"`
	Server      string          `json:"server_version,omitempty"`
	ScaleFactor float64         `json:"scale_factor"`
	Streams     int             `json:"streams"`
	Rule        string          `json:"rule"`
	Points      []tpchPointJSON `json:"points"`
	Error       string          `json:"error,omitempty"`
	queries     []int           // the selected queries, in order
	title       string          // the engine's name for people
}

type tpchPointJSON struct {
	Degree  int                `json:"degree"`
	TotalS  float64            `json:"total_s,omitempty"`
	Speedup float64            `json:"speedup,omitempty"` // against degree 0
	Queries map[string]float64 `json:"query_ms,omitempty"`
	Workers map[string]float64 `json:"workers_planned,omitempty"`
	Notes   []string           `json:"notes,omitempty"`
	Skipped string             `json:"skipped,omitempty"`
	Error   string             `json:"error,omitempty"`
}

func (v *tpchView) summary(l loadInfo, ran *study.Ran, runErr error) any {
	s := tpchSummary{Dir: ran.Dir, HTML: ran.HTML, Markdown: ran.Markdown, Engine: l.engine, ScaleFactor: l.params.Float("scale_factor"),
		Streams: int(l.params.Int("streams")), Server: serverVersion(ran, l.engine), title: l.title,
		Rule: "each query's time is the mean of its streams after the first stream and its fastest and slowest are dropped (seed 002's rule)"}
	s.queries, _ = tpch.ParseSelection(l.params.String("queries"))
	if runErr != nil {
		s.Error = runErr.Error()
	}
	serialTotal := 0.0
	for _, r := range ran.Results {
		p := tpchPointJSON{Degree: int(r.Params.Int("degree")), Notes: r.Notes, Skipped: r.Skipped, Error: r.Error}
		if r.Measured() {
			p.TotalS = r.Metrics["total_s"]
			p.Queries, p.Workers = map[string]float64{}, map[string]float64{}
			for _, q := range s.queries {
				p.Queries[fmt.Sprintf("Q%d", q)] = r.Metrics[fmt.Sprintf("q%02d_ms", q)]
				p.Workers[fmt.Sprintf("Q%d", q)] = r.Metrics[fmt.Sprintf("q%02d_workers", q)]
			}
			if p.Degree == 0 {
				serialTotal = p.TotalS
			}
		}
		s.Points = append(s.Points, p)
	}
	for i, p := range s.Points {
		if serialTotal > 0 && p.TotalS > 0 {
			s.Points[i].Speedup = serialTotal / p.TotalS
		}
	}
	return s
}

// print prints each query's time at each degree, and the total.
func (v *tpchView) print(w io.Writer, doc any) {
	s := doc.(tpchSummary)
	server := s.title
	if s.Server != "" {
		server += " " + s.Server
	}
	fmt.Fprintf(w, "TPC-H power test, %s, scale factor %s, %d streams per degree: %s.\n\n", server, tpch.FormatScale(s.ScaleFactor), s.Streams, s.Rule)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	header := "query\t"
	for _, p := range s.Points {
		header += fmt.Sprintf("degree %d (ms)\t", p.Degree)
	}
	fmt.Fprintln(tw, header)
	for _, q := range s.queries {
		line := fmt.Sprintf("Q%d\t", q)
		for _, p := range s.Points {
			if v, ok := p.Queries[fmt.Sprintf("Q%d", q)]; ok {
				line += fmt.Sprintf("%.1f\t", v)
			} else {
				line += "-\t"
			}
		}
		fmt.Fprintln(tw, line)
	}
	total := "total (s)\t"
	speed := "speedup\t"
	for _, p := range s.Points {
		if p.TotalS > 0 {
			total += fmt.Sprintf("%.2f\t", p.TotalS)
		} else {
			total += "-\t"
		}
		if p.Speedup > 0 {
			speed += fmt.Sprintf("%.2fx\t", p.Speedup)
		} else {
			speed += "-\t"
		}
	}
	fmt.Fprintln(tw, total)
	if len(s.Points) > 1 {
		fmt.Fprintln(tw, speed)
	}
	tw.Flush()
	for _, p := range s.Points {
		for _, n := range p.Notes {
			fmt.Fprintf(w, "degree %d: %s\n", p.Degree, n)
		}
		if p.Skipped != "" {
			fmt.Fprintf(w, "degree %d skipped: %s\n", p.Degree, p.Skipped)
		}
		if p.Error != "" {
			fmt.Fprintf(w, "degree %d FAILED: %s\n", p.Degree, p.Error)
		}
	}
	if s.HTML != "" {
		fmt.Fprintf(w, "\nreport: %s\n", s.HTML)
	}
}
