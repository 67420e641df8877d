package study

import (
	"math"
	"slices"
	"sort"

	"github.com/dbrig/dbrig/internal/measure"
)

// StudyFigures are one run's headline figures and what makes two runs'
// figures the same figure, for holding them against other runs.
type StudyFigures struct {
	// Setup names the study, its scale and the options that change what
	// it runs (engine, targets): a combination of a quick run and of a
	// full one, or of two engines, shares its name but not its figures.
	Setup   string
	Figures []Figure
}

// Setup is what a run's figures share with another run's of the same
// study at the same scale on the same engines and targets.
func (rd *RunData) Setup() string {
	return rd.Spec.Name + " --scale " + rd.Info.Scale + " " + rd.Info.Options.String()
}

// RepeatStats say how well a run's figures were foreseen by the same
// figures measured in the other runs given of its setup: each figure held
// against the median of the others, as if that median were a model. A
// model cannot be shown closer to a figure than the figure repeats, so
// these are the floor beside a model's error. Figures is how many had
// another run's; the errors are NaN when none had.
type RepeatStats struct {
	Figures   int     `json:"figures"`
	MedianPct float64 `json:"median_error_pct"`
	P90Pct    float64 `json:"p90_error_pct"`
}

// figureKey names the same figure in two runs of one study.
type figureKey struct{ setup, combo, metric string }

// Repeatability gives each run (in the order given) and all of them
// together the RepeatStats of their figures over the other runs.
func Repeatability(runs []StudyFigures) (each []RepeatStats, all RepeatStats) {
	measured := map[figureKey][]float64{}
	for _, r := range runs {
		for _, f := range r.Figures {
			k := figureKey{r.Setup, f.Combo, f.Metric}
			measured[k] = append(measured[k], f.Measured)
		}
	}
	var allErrs []float64
	for _, r := range runs {
		var errs []float64
		for _, f := range r.Figures {
			others := withoutOne(measured[figureKey{r.Setup, f.Combo, f.Metric}], f.Measured)
			if len(others) == 0 {
				continue
			}
			if e := PercentError(f.Measured, measure.Median(others)); !math.IsNaN(e) {
				errs = append(errs, math.Abs(e))
			}
		}
		allErrs = append(allErrs, errs...)
		each = append(each, repeatStats(errs))
	}
	return each, repeatStats(allErrs)
}

// withoutOne is values less one occurrence of v: the other runs' figures.
func withoutOne(values []float64, v float64) []float64 {
	i := slices.Index(values, v)
	if i < 0 {
		return values
	}
	return slices.Delete(slices.Clone(values), i, i+1)
}

func repeatStats(errs []float64) RepeatStats {
	st := RepeatStats{Figures: len(errs), MedianPct: math.NaN(), P90Pct: math.NaN()}
	if len(errs) > 0 {
		sort.Float64s(errs)
		st.MedianPct, st.P90Pct = nearestRank(errs, 0.5), nearestRank(errs, 0.9)
	}
	return st
}
