package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/dbrig/dbrig/internal/report"
	"github.com/dbrig/dbrig/internal/study"
	"github.com/dbrig/dbrig/internal/term"
	"github.com/dbrig/dbrig/internal/workload"
)

// parseExpectFlags reads every --expect against the metrics the kind
// declares, so a bad threshold is refused before anything starts.
func parseExpectFlags(exprs []string, k workload.Kind) ([]*study.Expectation, error) {
	var out []*study.Expectation
	var errs []error
	for _, expr := range exprs {
		e, err := study.ParseExpect(expr, k)
		if err != nil {
			errs = append(errs, fmt.Errorf("--expect %q: %w", expr, err))
			continue
		}
		out = append(out, e)
	}
	return out, errors.Join(errs...)
}

// expectJSON is one --expect as --json gives it: its verdict over every
// point of the load, and each point's measured value.
type expectJSON struct {
	Expect  string              `json:"expect"`
	Metric  string              `json:"metric"`
	Unit    string              `json:"unit"`
	Pass    bool                `json:"pass"`
	Verdict report.Verdict      `json:"verdict"`
	Why     string              `json:"why"`
	Points  []expectPointJSON   `json:"points"`
	outcome study.ExpectOutcome // for the text
	e       *study.Expectation
}

type expectPointJSON struct {
	Combo    string         `json:"combo,omitempty"`
	Verdict  report.Verdict `json:"verdict"`
	Value    *float64       `json:"value,omitempty"` // in the metric's unit
	Measured string         `json:"measured,omitempty"`
	Missing  string         `json:"missing,omitempty"`
}

// judgeExpectations decides each --expect on the run's results: it passes
// only when it holds at every point of the load.
func judgeExpectations(es []*study.Expectation, ran *study.Ran) []expectJSON {
	var rd *study.RunData
	if ran != nil {
		rd = ran.Run
	}
	var out []expectJSON
	for _, e := range es {
		j := expectJSON{Expect: e.Expr, Metric: e.Label(), Unit: string(e.Unit()), e: e,
			Verdict: report.NotMeasured, Why: "The run wrote no report to read it from."}
		if rd != nil {
			j.outcome = e.Judge(rd)
			j.Verdict, j.Why, j.Pass = j.outcome.Verdict, j.outcome.Why, j.outcome.Pass()
		}
		for _, p := range j.outcome.Points {
			pj := expectPointJSON{Combo: p.Combo, Verdict: p.Verdict, Missing: p.Missing}
			if p.Missing == "" {
				pj.Value, pj.Measured = &p.Kept, e.Format(p.Kept)
			}
			j.Points = append(j.Points, pj)
		}
		out = append(out, j)
	}
	return out
}

func expectFailed(checks []expectJSON) int {
	n := 0
	for _, c := range checks {
		if !c.Pass {
			n++
		}
	}
	return n
}

// printExpectations writes each --expect with what was measured and
// whether it passed.
func printExpectations(w io.Writer, style term.Style, checks []expectJSON) {
	if len(checks) == 0 {
		return
	}
	fmt.Fprintln(w, "\nexpectations (each must hold at every point):")
	for _, c := range checks {
		var measured []string
		for _, p := range c.Points {
			figure := p.Measured
			if p.Value == nil {
				figure = "not measured"
			}
			if len(c.Points) > 1 {
				figure += " at " + p.Combo
			}
			measured = append(measured, figure)
		}
		if len(measured) == 0 {
			measured = []string{"not measured"}
		}
		verdict := style.Green("pass")
		if !c.Pass {
			verdict = style.Red("FAIL")
		}
		fmt.Fprintf(w, "  %s  %s: %s %s\n", verdict, c.Expect, c.Metric, strings.Join(measured, "; "))
		if !c.Pass {
			fmt.Fprintf(w, "        %s\n", c.Why)
		}
	}
}

// withExpectations adds the --expect verdicts to a load's JSON document as
// its "expectations" field, after the view's own fields.
func withExpectations(doc any, checks []expectJSON) any {
	if len(checks) == 0 {
		return doc
	}
	head, err := json.Marshal(doc)
	if err != nil || len(head) < 2 || head[len(head)-1] != '}' {
		// Every view's document is an object; were one not, it would
		// still be printed whole, beside the verdicts.
		return struct {
			Load         any          `json:"load"`
			Expectations []expectJSON `json:"expectations"`
		}{doc, checks}
	}
	tail, err := json.Marshal(checks)
	if err != nil {
		return doc
	}
	sep := ","
	if len(head) == 2 {
		sep = ""
	}
	out := append(head[:len(head)-1:len(head)-1], sep+`"expectations":`...)
	out = append(append(out, tail...), '}')
	return json.RawMessage(out)
}

// expectOutcome is the load's exit: a failed --expect makes a load that ran
// exit 1, so a CI job can gate on it; a failed or interrupted load keeps
// its own exit.
func expectOutcome(loadErr error, checks []expectJSON) error {
	if loadErr != nil {
		return loadErr
	}
	if n := expectFailed(checks); n > 0 {
		return failure(fmt.Errorf("%d of %d --expect thresholds failed", n, len(checks)))
	}
	return nil
}
