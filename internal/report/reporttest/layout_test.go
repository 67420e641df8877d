package reporttest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dbrig/dbrig/internal/report"
)

// handChart is one chart of a hand-made page: its container's height and
// its echarts option, set as the report's own script would.
type handChart struct {
	id     string
	height int
	option map[string]any
}

// handPage writes a page with the report's echarts, the charts, and body
// HTML beside them, and returns its path.
func handPage(t *testing.T, body string, charts ...handChart) string {
	t.Helper()
	echarts, err := os.ReadFile(filepath.Join("..", "assets", "echarts.min.js"))
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	b.WriteString("<!DOCTYPE html><html><head><meta charset=\"utf-8\"><style>body{margin:8px;font:14px sans-serif}</style></head><body>\n")
	b.WriteString(body)
	for _, c := range charts {
		opt, err := json.Marshal(c.option)
		if err != nil {
			t.Fatal(err)
		}
		b.WriteString("<div data-chart id=\"" + c.id + "\" style=\"width:900px;height:" + itoa(c.height) + "px\"></div>\n")
		b.WriteString("<script type=\"application/json\" class=\"opt\" data-for=\"" + c.id + "\">" + string(opt) + "</script>\n")
	}
	b.WriteString("<script>" + string(echarts) + "</script>\n")
	b.WriteString(`<script>
for (const s of document.querySelectorAll("script.opt")) {
  const el = document.getElementById(s.dataset.for);
  const c = echarts.init(el, null, {renderer: "canvas"});
  c.on("finished", () => el.setAttribute("data-rendered", "1"));
  c.setOption(JSON.parse(s.textContent));
}
</script></body></html>`)
	path := filepath.Join(t.TempDir(), "page.html")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// lineOption is a plain, readable chart: one value axis, series of the
// given names, units and metrics, each with its y values at x = 1, 2, ...
func lineOption(series ...map[string]any) map[string]any {
	var names []string
	for _, s := range series {
		names = append(names, s["name"].(string))
		s["type"] = "line"
		s["animation"] = false
	}
	return map[string]any{
		"animation": false,
		"legend":    map[string]any{"data": names},
		"grid":      map[string]any{"left": 76, "right": 28, "top": 44, "bottom": 56},
		"xAxis":     map[string]any{"type": "value", "name": "x", "nameLocation": "middle", "nameGap": 32},
		"yAxis":     map[string]any{"type": "value", "name": "y", "nameLocation": "middle", "nameGap": 56},
		"series":    series,
	}
}

func series(name, unit, metric string, ys ...float64) map[string]any {
	var data [][2]float64
	for i, y := range ys {
		data = append(data, [2]float64{float64(i + 1), y})
	}
	s := map[string]any{"name": name, "data": data, "dbrigUnit": unit}
	if metric != "" {
		s["dbrigMetric"] = metric
	}
	return s
}

// TestLayoutCheckPassesAGoodPage: a readable chart, and a wide table in a
// box that scrolls sideways, raise nothing.
func TestLayoutCheckPassesAGoodPage(t *testing.T) {
	needChromium(t)
	t.Parallel()
	wideInBox := `<div style="overflow-x:auto"><table style="width:3000px"><tr><td>a wide table in its scroll box</td></tr></table></div>`
	page := handPage(t, wideInBox,
		handChart{"good", 400, lineOption(series("tps", "tps", "tps", 5000, 5200, 4900), series("tps model", "tps", "tps", 5100, 5100, 5100))},
		handChart{"response", 400, lineOption(series("mean response", "ms", "response", 2, 3, 2.5))})
	res := checkPage(t, page)
	if ps := res.Problems(); len(ps) > 0 {
		t.Errorf("a good page has problems: %q", ps)
	}
	if len(res.Charts) != 2 || len(res.Charts[0].Axes) != 1 || res.Charts[0].Axes[0].Ticks < minTicks {
		t.Errorf("charts %+v: want two, the first with a readable y axis", res.Charts)
	}
}

// TestLayoutCheckSeesEachDefect: each defect the check exists for, on a
// page of its own, is reported, and only it.
func TestLayoutCheckSeesEachDefect(t *testing.T) {
	needChromium(t)
	t.Parallel()
	clipped := lineOption(series("tps", "tps", "", 1, 2, 3))
	clipped["xAxis"] = map[string]any{"type": "category", "data": []string{"engine=postgres pg_cache=128MB maria_cache=128M path=scan", "b", "c"},
		"axisLabel": map[string]any{"interval": 0, "rotate": 30}}
	legend := lineOption(series("tps", "tps", "tps", 1, 2, 3))
	legend["legend"] = map[string]any{"data": []string{"tps", "ghost"}}
	for _, tt := range []struct {
		name  string
		body  string
		chart []handChart
		want  string
	}{
		// The compare page's flat strip: a plot 34 px high.
		{"one tick", "", []handChart{{"strip", 130, lineOption(series("ratio", "ratio", "", 0.5, 2, 1))}}, `y axis 0 ("y") shows`},
		// The per-second chart with rate and response times on one axis.
		{"flat", "", []handChart{{"mixed", 400, lineOption(series("tps", "tps", "tps", 5000, 5400, 5100), series("p99", "ms", "response", 2, 9, 4))}},
			`series "p99" (ms) lies flat on y axis 0, which it shares with "tps" (tps)`},
		// The response chart's line named after the throughput chart's.
		{"legend metric", "", []handChart{
			{"throughput", 400, lineOption(series("tps", "tps", "tps", 5000, 5400, 5100))},
			{"response", 400, lineOption(series("tps", "ms", "response", 2, 3, 2.5))}},
			`chart "response": series "tps" draws response but its name says tps`},
		{"legend entry", "", []handChart{{"ghost", 400, legend}}, `legend entry "ghost" names no series`},
		// The compare page's long category labels slanted off the left edge.
		{"clipped", "", []handChart{{"clip", 400, clipped}}, `"engine=postgres pg_cache=128MB maria_cache=128M path=scan" at x -`},
		// A wide table outside any scroll box.
		{"wide", `<table id="servers" style="width:3000px"><tr><td>servers while the points ran</td></tr></table>`,
			[]handChart{{"fine", 400, lineOption(series("tps", "tps", "", 1, 2, 3))}}, `table#servers ("servers while the points ran") reaches`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ps := checkPage(t, handPage(t, tt.body, tt.chart...)).Problems()
			if len(ps) != 1 || !strings.Contains(ps[0], tt.want) {
				t.Errorf("problems %q, want one saying %q", ps, tt.want)
			}
		})
	}
}

// checkDoc writes d as a report, checks it in the browser and fails the
// test on each problem found.
func checkDoc(t *testing.T, d *report.Doc) (htmlPath string, res BrowserCheck) {
	t.Helper()
	htmlPath, _, err := report.WriteFiles(t.TempDir(), d)
	if err != nil {
		t.Fatal(err)
	}
	res = checkPage(t, htmlPath)
	for _, p := range res.Problems() {
		t.Error(p)
	}
	return htmlPath, res
}

func checkPage(t *testing.T, page string) BrowserCheck {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := CheckInBrowser(ctx, page, filepath.Join(filepath.Dir(page), "page.png"))
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// TestLongCategoryLabelsKeepThePlot: a report's charts of categories with
// long labels (the comparison of two key-lookup runs; a dozen slanted
// ones; a few that wrap) keep a plot with a readable axis and every label
// inside the chart.
func TestLongCategoryLabelsKeepThePlot(t *testing.T) {
	needChromium(t)
	t.Parallel()
	bars := func(id string, cats ...string) report.Chart {
		s := report.Series{Name: "ratio", Style: report.Bars}
		for i := range cats {
			s.Points = append(s.Points, report.XY{X: float64(i), Y: 0.5 + float64(i%3)/2})
		}
		return report.Chart{ID: id, Title: id, XLabel: "combination", YLabel: "B / A", XCategories: cats, Series: []report.Series{s}}
	}
	var dozen []string
	for i := range 12 {
		dozen = append(dozen, fmt.Sprintf("experiment=client-row-by-row net=rtt-%dms client_cost=0s", i))
	}
	d := &report.Doc{Title: "long labels", Charts: []report.Chart{
		bars("compare", "engine=postgres pg_cache=128MB maria_cache=128M path=scan", "engine=postgres pg_cache=128MB maria_cache=128M path=lookup",
			"engine=mariadb pg_cache=128MB maria_cache=128M path=scan", "engine=mariadb pg_cache=128MB maria_cache=128M path=lookup"),
		bars("dozen", dozen...),
		bars("wrapped", "experiment=client-row-by-row net=unix", "experiment=server-loop net=lan-1g", "experiment=client-stream net=rtt-77ms"),
	}}
	checkDoc(t, d)
}

// TestBoxPlotDraws: a distribution's runs drawn as box plots, two series
// side by side on categories and one on a value axis, are drawn, their
// boxes at the runs' quartiles, and the chart passes the layout check.
func TestBoxPlotDraws(t *testing.T) {
	needChromium(t)
	t.Parallel()
	runs := func(name string, base float64) report.Series {
		s := report.Series{Name: name, Style: report.Box, Unit: "ms"}
		for x := range 3 {
			for r, v := range []float64{1, 2, 3, 4, 10} {
				s.Points = append(s.Points, report.XY{X: float64(x), Y: base + float64(x) + v, Label: fmt.Sprintf("run %d", r+1)})
			}
		}
		return s
	}
	d := &report.Doc{Title: "box plots", Charts: []report.Chart{
		{ID: "by-engine", Title: "time by path", XLabel: "path", YLabel: "time (ms)", XCategories: []string{"scan", "lookup", "both"},
			Series: []report.Series{runs("A", 10), runs("B", 20)}},
		{ID: "by-users", Title: "time by users", XLabel: "users", YLabel: "time (ms)", Series: []report.Series{runs("runs", 5)}},
	}}
	htmlPath, res := checkDoc(t, d)
	if res.Rendered != 2 {
		t.Errorf("%d of 2 box plot charts drawn: %+v", res.Rendered, res.Charts)
	}
	page, err := os.ReadFile(htmlPath)
	if err != nil {
		t.Fatal(err)
	}
	// Runs 11, 12, 13, 14, 20 at the first category: median 13, quartiles
	// 12 and 14; on the value axis, 6 to 15 at x 0.
	for _, want := range []string{`"type":"boxplot"`, `"value":[11,12,13,14,20]`, `"value":[0,6,7,8,9,15]`} {
		if !strings.Contains(string(page), want) {
			t.Errorf("the page lacks %s", want)
		}
	}
}
