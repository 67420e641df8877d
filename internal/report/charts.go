package report

import (
	"encoding/json"
	"fmt"
	"html/template"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/go-echarts/go-echarts/v2/charts"
	"github.com/go-echarts/go-echarts/v2/opts"
)

// palette is the series colours, in order: colour-blind-safe (Okabe-Ito),
// dark enough to read on white.
var palette = []string{
	"#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#F0E442",
}

// dashIcon is a dashed line as an echarts symbol, for the model in the
// legend and as a tick on categories. The two zero-length lines keep its
// box taller than the dashes, so they stay thin when scaled.
const dashIcon = "path://M0,0L0,0M0,10L0,10M0,4h6v2h-6zM9,4h6v2h-6zM18,4h6v2h-6z"

// chartData is one chart ready for the page: its element id, its echarts
// option as JSON (safe to place inside a <script> element: json.Marshal
// escapes <, > and &), and what was left out and why.
type chartData struct {
	Chart
	ElemID  string
	Height  int // px: the plot's, its legend's and its labels'
	Option  template.JS
	Dropped []string // notes on points that could not be drawn
}

// buildCharts lays out every chart with go-echarts and assigns each a unique
// element id (Chart.ID when it is set and unique, chart-N otherwise).
func buildCharts(cs []Chart) ([]chartData, error) {
	out := make([]chartData, 0, len(cs))
	seen := map[string]bool{}
	for i, c := range cs {
		if c.Empty() {
			continue // nothing ran that it would draw: no blank axes
		}
		id := c.ID
		if id == "" || seen[id] {
			id = fmt.Sprintf("chart-%d", i+1)
		}
		seen[id] = true
		opt, dropped, err := chartOption(c)
		if err != nil {
			return nil, fmt.Errorf("chart %q (%s): %w", c.Title, id, err)
		}
		out = append(out, chartData{Chart: c, ElemID: id, Height: chartTop(c) + plotHeight + categoryLayout(c.XCategories).bottom, Option: opt, Dropped: dropped})
	}
	return out, nil
}

// chartOption builds the echarts option of one chart with go-echarts and
// returns it as JSON. The page's script adds what JSON cannot carry
// (tooltip and axis label formatters), so no JavaScript is built from data.
func chartOption(c Chart) (template.JS, []string, error) {
	xType, yType := "value", "value"
	if c.XLog {
		xType = "log"
	}
	if c.YLog {
		yType = "log"
	}
	if len(c.XCategories) > 0 {
		xType = "category"
	}
	hasPoints := false
	for _, s := range c.Series {
		if s.Style == Points || s.Style == Box {
			hasPoints = true
		}
	}
	trigger := "axis"
	if hasPoints {
		// Every run is its own marker: the tooltip names the one under the
		// pointer, not the nearest point of every series.
		trigger = "item"
	}

	top := chartTop(c)
	cat := categoryLayout(c.XCategories)
	height := top + plotHeight + cat.bottom
	base := charts.NewLine()
	base.Colors = palette
	base.SetGlobalOptions(
		charts.WithInitializationOpts(opts.Initialization{Width: "100%", Height: fmt.Sprintf("%dpx", height), Theme: "white"}),
		charts.WithAnimation(true),
		charts.WithLegendOpts(opts.Legend{Show: opts.Bool(true), Type: "plain", Top: "0", Left: "center", Width: "88%"}),
		charts.WithTooltipOpts(opts.Tooltip{Show: opts.Bool(true), Trigger: trigger, AxisPointer: &opts.AxisPointer{Type: "line"}}),
		charts.WithToolboxOpts(opts.Toolbox{Show: opts.Bool(true), Right: "8", Top: "0", Feature: &opts.ToolBoxFeature{
			SaveAsImage: &opts.ToolBoxFeatureSaveAsImage{Show: opts.Bool(true), Type: "png", Title: "Save as PNG", Name: c.ID},
		}}),
		charts.WithXAxisOpts(opts.XAxis{
			Type: xType, Name: c.XLabel, NameLocation: "middle", NameGap: cat.nameGap,
			SplitLine: &opts.SplitLine{Show: opts.Bool(xType != "category")},
			AxisLabel: &opts.AxisLabel{Interval: "0", Rotate: cat.rotate},
		}),
		charts.WithYAxisOpts(opts.YAxis{
			Type: yType, Name: c.YLabel, NameLocation: "middle", NameGap: 56,
			SplitLine: &opts.SplitLine{Show: opts.Bool(true)},
		}),
	)
	base.GridList = []opts.Grid{{Left: strconv.Itoa(cat.left), Right: "28", Top: strconv.Itoa(top), Bottom: strconv.Itoa(cat.bottom)}}
	if xType == "category" {
		base.SetXAxis(c.XCategories)
	}

	hasBars := false
	for _, s := range c.Series {
		hasBars = hasBars || s.Style == Bars
	}
	// On categories drawn as bars a line from one category to the next
	// means nothing: the model is then a dashed tick on each category.
	modelTicks := xType == "category" && hasBars

	legend, dropped := addSeries(base, c, modelTicks)
	base.Legend.Data = legend
	base.Validate()
	b, err := finishOption(base.JSON(), c, cat)
	if err != nil {
		return "", nil, fmt.Errorf("encode echarts option: %w", err)
	}
	return template.JS(b), dropped, nil
}

// addSeries draws each of c's series on base in its style and returns the
// legend's entries and a note for each series with points not drawn.
func addSeries(base *charts.Line, c Chart, modelTicks bool) ([]map[string]string, []string) {
	var legend []map[string]string
	var dropped []string
	for _, s := range c.Series {
		item := map[string]string{"name": s.Name}
		if s.Style == Model {
			item["icon"] = dashIcon
		}
		legend = append(legend, item)
		pts, skipped := drawable(s.Points, c, s.Style)
		if skipped > 0 {
			why := "not finite"
			if c.XLog || c.YLog {
				why = "not finite, or not positive on a log axis"
			}
			dropped = append(dropped, fmt.Sprintf("%s: %d point(s) not drawn (%s)", s.Name, skipped, why))
		}
		switch {
		case s.Style == Box:
			bp := charts.NewBoxPlot()
			bp.AddSeries(s.Name, boxes(pts, len(c.XCategories)), charts.WithItemStyleOpts(opts.ItemStyle{BorderWidth: 1.5}))
			base.Overlap(bp)
		case s.Style == Model && modelTicks:
			data := make([]opts.ScatterData, len(pts))
			for i, p := range pts {
				data[i] = opts.ScatterData{Name: p.Label, Value: []float64{p.X, p.Y}}
			}
			sc := charts.NewScatter()
			sc.AddSeries(s.Name, data, charts.WithScatterChartOpts(opts.ScatterChart{Symbol: dashIcon, SymbolSize: []int{40, 16}}))
			base.Overlap(sc)
		case s.Style == Points:
			data := make([]opts.ScatterData, len(pts))
			for i, p := range pts {
				data[i] = opts.ScatterData{Name: p.Label, Value: []float64{p.X, p.Y}}
			}
			sc := charts.NewScatter()
			sc.AddSeries(s.Name, data,
				charts.WithScatterChartOpts(opts.ScatterChart{Symbol: "circle", SymbolSize: 7}),
				charts.WithItemStyleOpts(opts.ItemStyle{Opacity: opts.Float(0.6)}),
				charts.WithEmphasisOpts(opts.Emphasis{Focus: "series"}))
			base.Overlap(sc)
		case s.Style == Bars:
			data := make([]opts.BarData, len(pts))
			for i, p := range pts {
				data[i] = opts.BarData{Name: p.Label, Value: []float64{p.X, p.Y}}
			}
			b := charts.NewBar()
			b.AddSeries(s.Name, data, charts.WithSeriesOpts(func(ss *charts.SingleSeries) { ss.BarMaxWidth = "48" }))
			base.Overlap(b)
		default:
			data := make([]opts.LineData, len(pts))
			for i, p := range pts {
				data[i] = opts.LineData{Name: p.Label, Value: []float64{p.X, p.Y}}
			}
			var so []charts.SeriesOpts
			switch s.Style {
			case Model:
				so = append(so,
					charts.WithLineChartOpts(opts.LineChart{ShowSymbol: opts.Bool(false), Symbol: "none"}),
					charts.WithLineStyleOpts(opts.LineStyle{Type: "dashed", Width: 2}))
			case Area:
				so = append(so,
					charts.WithLineChartOpts(opts.LineChart{ShowSymbol: opts.Bool(false)}),
					charts.WithLineStyleOpts(opts.LineStyle{Width: 1.5}),
					charts.WithAreaStyleOpts(opts.AreaStyle{Opacity: opts.Float(0.15)}))
			default: // Line, and any style not known here
				so = append(so,
					charts.WithLineChartOpts(opts.LineChart{ShowSymbol: opts.Bool(true), Symbol: "circle", SymbolSize: 6}),
					charts.WithLineStyleOpts(opts.LineStyle{Width: 2}))
			}
			base.AddSeries(s.Name, data, so...)
		}
	}
	return legend, dropped
}

// finishOption adds to go-echarts' option what it has no field for: each
// series' unit and metric, which the browser check compares, and the
// category labels' width for wrapping.
func finishOption(option any, c Chart, cat catLayout) ([]byte, error) {
	b, err := json.Marshal(option)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	// go-echarts keeps the series in the order they were added: c.Series's.
	series, _ := m["series"].([]any)
	for i, s := range series {
		so, ok := s.(map[string]any)
		if !ok || i >= len(c.Series) {
			continue
		}
		unit := c.Series[i].Unit
		if unit == "" {
			unit = c.YLabel
		}
		so["dbrigUnit"] = unit
		if c.Series[i].Metric != "" {
			so["dbrigMetric"] = c.Series[i].Metric
		}

	}
	overlapDisjointBars(series, c)
	if cat.wrapWidth > 0 {
		if xs, _ := m["xAxis"].([]any); len(xs) > 0 {
			if x, ok := xs[0].(map[string]any); ok {
				label, _ := x["axisLabel"].(map[string]any)
				if label == nil {
					label = map[string]any{}
				}
				label["width"], label["overflow"] = cat.wrapWidth, cat.overflow
				x["axisLabel"] = label
			}
		}
	}
	return json.Marshal(m)
}

// overlapDisjointBars draws bars of series that never share a category in
// the category's middle, under its label, rather than each in a slot of its
// own beside an empty one (the comparison's "beyond" and "within the
// spread").
func overlapDisjointBars(series []any, c Chart) {
	seen := map[float64]bool{}
	var bars []map[string]any
	for i, s := range series {
		so, ok := s.(map[string]any)
		if !ok || i >= len(c.Series) || c.Series[i].Style != Bars {
			continue
		}
		for _, p := range c.Series[i].Points {
			if seen[p.X] {
				return
			}
		}
		for _, p := range c.Series[i].Points {
			seen[p.X] = true
		}
		bars = append(bars, so)
	}
	for _, so := range bars {
		so["barGap"] = "-100%"
	}
}

// The plot's own height, whatever the legend and the labels take around it:
// a chart stays readable when its labels are long.
const plotHeight = 320

// Widths assumed for laying out category labels: the chart's grid in a
// 1280 px window, and a label's character.
const (
	gridWidth = 880
	charWidth = 7
	lineStep  = 16 // px a label's line takes
	maxSlant  = 240
)

// catLayout is how an x axis's labels are drawn and the room they take
// below the plot.
type catLayout struct {
	rotate    float64
	wrapWidth int    // px, when the labels wrap or are cut
	overflow  string // "break" or "truncate"
	left      int    // the grid's left edge
	bottom    int    // room below the plot
	nameGap   int    // the axis name's distance below the axis
}

// categoryLayout shows every category label: on one line when they fit
// their slot, wrapped at spaces onto up to three lines, else slanted and
// cut at maxSlant px, the grid moved right so the first does not run off
// the chart's left edge (the tooltip shows a label whole).
func categoryLayout(cats []string) catLayout {
	l := catLayout{left: 76, bottom: 56, nameGap: 32}
	if len(cats) == 0 {
		return l
	}
	slot := gridWidth/len(cats) - 8
	if charWidth*longestLabel(cats) <= slot {
		return l
	}
	if lines := wrappedLines(cats, slot); lines > 0 && lines <= 3 {
		l.wrapWidth, l.overflow = slot, "break"
		l.nameGap = lineStep*lines + 16
		l.bottom = l.nameGap + 24
		return l
	}
	l.rotate = 30
	width := min(charWidth*longestLabel(cats), maxSlant)
	l.wrapWidth, l.overflow = width, "truncate"
	l.nameGap = width/2 + 26 // sin 30° of the label, and its own height
	l.bottom = l.nameGap + 24
	// A label slanted at 30° reaches cos 30° of its width left of its
	// category's middle.
	l.left = max(l.left, width*87/100-gridWidth/len(cats)/2+8)
	return l
}

// wrappedLines is how many lines the longest label takes wrapped at spaces
// to width px, or 0 when a word alone is wider.
func wrappedLines(labels []string, width int) int {
	most := 0
	for _, label := range labels {
		lines, used := 1, 0
		for _, w := range strings.Fields(label) {
			n := charWidth * len([]rune(w))
			if n > width {
				return 0
			}
			switch {
			case used == 0:
				used = n
			case used+charWidth+n <= width:
				used += charWidth + n
			default:
				lines++
				used = n
			}
		}
		most = max(most, lines)
	}
	return most
}

// chartTop is the room above the plot. Every legend entry is shown (no
// paging): the grid moves down by the rows the legend takes, and the chart
// grows by as much.
func chartTop(c Chart) int { return 44 + 22*(legendRows(c.Series)-1) }

// boxes makes a box plot's items from a distribution's points: per x, in
// order, [x, least, lower quartile, median, upper quartile, greatest]. On
// an axis of categories echarts takes an item's place in the list for its
// x: there the items are the categories' in order, without x, and empty
// where a category has no points.
func boxes(pts []XY, categories int) []opts.BoxPlotData {
	byX := map[float64][]float64{}
	var xs []float64
	for _, p := range pts {
		if _, ok := byX[p.X]; !ok {
			xs = append(xs, p.X)
		}
		byX[p.X] = append(byX[p.X], p.Y)
	}
	sort.Float64s(xs)
	box := func(ys []float64) []float64 {
		sort.Float64s(ys)
		return []float64{ys[0], quantile(ys, 0.25), quantile(ys, 0.5), quantile(ys, 0.75), ys[len(ys)-1]}
	}
	if categories > 0 {
		data := make([]opts.BoxPlotData, categories)
		for i := range data {
			data[i].Value = []float64{}
			if ys := byX[float64(i)]; len(ys) > 0 {
				data[i] = opts.BoxPlotData{Name: fmt.Sprintf("%d runs", len(ys)), Value: box(ys)}
			}
		}
		return data
	}
	data := make([]opts.BoxPlotData, 0, len(xs))
	for _, x := range xs {
		ys := byX[x]
		data = append(data, opts.BoxPlotData{Name: fmt.Sprintf("%d runs", len(ys)), Value: append([]float64{x}, box(ys)...)})
	}
	return data
}

// quantile of sorted values, interpolated between the nearest ranks (the
// rule of R's default and HammerDB's box plots).
func quantile(sorted []float64, q float64) float64 {
	pos := q * float64(len(sorted)-1)
	lo := int(pos)
	if lo+1 >= len(sorted) {
		return sorted[lo]
	}
	return sorted[lo] + (pos-float64(lo))*(sorted[lo+1]-sorted[lo])
}

// legendRows estimates the rows a plain legend takes across a chart about
// 900 px wide: each entry is its name (about 7 px a character) and a 40 px
// icon and gap.
func legendRows(series []Series) int {
	rows, width := 1, 0
	for _, s := range series {
		w := 7*len([]rune(s.Name)) + 40
		if width > 0 && width+w > 800 {
			rows++
			width = 0
		}
		width += w
	}
	return rows
}

func longestLabel(labels []string) int {
	n := 0
	for _, l := range labels {
		n = max(n, len([]rune(l)))
	}
	return n
}

// drawable returns the points that can be drawn (finite, positive on a log
// axis), sorted by x for joined styles so a line does not zigzag, and how
// many were left out.
func drawable(ps []XY, c Chart, style SeriesStyle) ([]XY, int) {
	out := make([]XY, 0, len(ps))
	for _, p := range ps {
		if !finite(p.X) || !finite(p.Y) || (c.YLog && p.Y <= 0) || (c.XLog && len(c.XCategories) == 0 && p.X <= 0) {
			continue
		}
		out = append(out, p)
	}
	if style != Points {
		sort.SliceStable(out, func(i, j int) bool { return out[i].X < out[j].X })
	}
	return out, len(ps) - len(out)
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
