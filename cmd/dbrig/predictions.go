package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"text/tabwriter"

	"github.com/dbrig/dbrig/internal/study"
)

// runPredictions is one run's modelled figures, for dbrig report
// --predictions.
type runPredictions struct {
	dir     string
	rd      *study.RunData
	figures []study.Figure
}

// predictionsJSON is a run's (or every run's) prediction stats as --json
// prints them: errors are absent where no figure has a model.
type predictionsJSON struct {
	Dir       string         `json:"dir,omitempty"`
	Figures   int            `json:"figures"`
	Predicted int            `json:"predicted"`
	Fitted    int            `json:"fitted"`
	MedianPct *float64       `json:"median_error_pct,omitempty"`
	P90Pct    *float64       `json:"p90_error_pct,omitempty"`
	Worst     []study.Figure `json:"worst,omitempty"`
	// Repeat holds the figures against the same figures of the other runs
	// given of the same study: how closely they repeat, the floor beside
	// the models' error. Absent where no figure had another run's.
	Repeat *study.RepeatStats `json:"repeatability,omitempty"`
}

func newPredictionsJSON(dir string, st study.PredictionStats, rep study.RepeatStats) predictionsJSON {
	j := predictionsJSON{Dir: dir, Figures: st.Figures, Predicted: st.Predicted, Fitted: st.Fitted, Worst: st.Worst}
	if !math.IsNaN(st.MedianPct) {
		j.MedianPct, j.P90Pct = &st.MedianPct, &st.P90Pct
	}
	if rep.Figures > 0 { // its errors are numbers then, never NaN
		j.Repeat = &rep
	}
	return j
}

// printPredictions prints, for each run and over them all, the share of
// headline figures a model gave and their error, how closely the figures
// repeat in the other runs given of the same study, and where each
// workload's model misses most. Every directory is checked to be a run
// before anything is printed: one that is not is a usage error.
func printPredictions(w io.Writer, dirs []string, reg *study.Registry, asJSON bool) error {
	for _, dir := range dirs {
		if _, err := os.Stat(filepath.Join(dir, study.RunFile)); err != nil {
			return usageError(&notRunDirError{dir: dir})
		}
	}
	var runs []runPredictions
	var all []study.Figure
	var byStudy []study.StudyFigures
	for _, dir := range dirs {
		rd, err := study.LoadRun(dir, reg)
		if err != nil {
			return failure(fmt.Errorf("predictions of %s: %w", dir, err))
		}
		fs := rd.Figures()
		runs = append(runs, runPredictions{dir: dir, rd: rd, figures: fs})
		all = append(all, fs...)
		byStudy = append(byStudy, study.StudyFigures{Setup: rd.Setup(), Figures: fs})
	}
	total := study.SummarizeFigures(all)
	repeat, repeatAll := study.Repeatability(byStudy)
	if asJSON {
		out := struct {
			Runs []predictionsJSON `json:"runs"`
			All  predictionsJSON   `json:"all"`
		}{All: newPredictionsJSON("", total, repeatAll)}
		for i, r := range runs {
			out.Runs = append(out.Runs, newPredictionsJSON(r.dir, study.SummarizeFigures(r.figures), repeat[i]))
		}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return failure(enc.Encode(out))
	}
	if err := printPredictionTable(w, runs, total, repeat, repeatAll); err != nil {
		return failure(err)
	}
	formatOf := map[string]func(string, float64) string{}
	for _, r := range runs {
		formatOf[r.rd.Spec.Kind().Name] = r.rd.FormatMetric
	}
	if len(total.Worst) > 0 {
		fmt.Fprintln(w, "\nWhere each workload's model misses most:")
	}
	for _, f := range total.Worst {
		fmt.Fprintf(w, "  - %s\n", study.WorstLine(f, formatOf[f.Workload]))
	}
	return nil
}

// printPredictionTable prints a row a run and one for them all; the
// columns of how the figures repeat only where some run's figures had
// another run's to be held against.
func printPredictionTable(w io.Writer, runs []runPredictions, total study.PredictionStats, repeat []study.RepeatStats, repeatAll study.RepeatStats) error {
	withRepeat := repeatAll.Figures > 0
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	header := "run\tfigures\tpredicted\tfit\tnone\tmedian error\tp90 error\t"
	if withRepeat {
		header += "repeat median\trepeat p90\t"
	}
	fmt.Fprintln(tw, header)
	row := func(name string, st study.PredictionStats, rep study.RepeatStats) {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%s\t%s\t", name, st.Figures, st.Predicted, st.Fitted,
			st.Figures-st.Predicted-st.Fitted, errorCell(st.MedianPct), errorCell(st.P90Pct))
		if withRepeat {
			fmt.Fprintf(tw, "%s\t%s\t", errorCell(rep.MedianPct), errorCell(rep.P90Pct))
		}
		fmt.Fprintln(tw)
	}
	for i, r := range runs {
		row(r.dir, study.SummarizeFigures(r.figures), repeat[i])
	}
	if len(runs) > 1 {
		row(fmt.Sprintf("all %d runs", len(runs)), total, repeatAll)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if withRepeat {
		_, err := fmt.Fprintln(w, "\nrepeat: each figure against the median of the same figure in the other runs given of its study\n"+
			"(same scale, engines and targets), as if that were a model: how closely the figures repeat,\n"+
			"so no model can be shown closer.")
		return err
	}
	return nil
}

func errorCell(v float64) string {
	if math.IsNaN(v) {
		return "-"
	}
	return fmt.Sprintf("%.1f %%", v)
}
