package study

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"

	"github.com/dbrig/dbrig/internal/workload"
)

// Progress shows a run's progress: bars on a terminal, plain lines when
// the output is a pipe or a file.
type Progress interface {
	Start(points, skipped int)
	StartPoint(n, total int, key string)
	Note(msg string)
	Update(done, total int64)
	// EndPoint prints a finished point's line (see PointLine).
	EndPoint(line string)
	Close()
}

type nopProgress struct{}

func (nopProgress) Start(int, int)              {}
func (nopProgress) StartPoint(int, int, string) {}
func (nopProgress) Note(string)                 {}
func (nopProgress) Update(int64, int64)         {}
func (nopProgress) EndPoint(string)             {}
func (nopProgress) Close()                      {}

// PointLine describes a finished point in one line: its key, headline
// metrics (the workload's declared ones, else the modelled ones), the
// model's prediction and the error, and what qualifies the figures.
func PointLine(k workload.Kind, r workload.Result) string {
	if r.Interrupted() {
		return fmt.Sprintf("%s: interrupted after %.1fs: what it measured is kept in %s, labelled interrupted, and is no result (--resume runs the point again)", r.Key, r.Seconds, ResultsFile)
	}
	if !r.OK() {
		// The whole error, once: the run's last message does not repeat it.
		return fmt.Sprintf("%s: FAILED: %s", r.Key, strings.ReplaceAll(strings.TrimSpace(r.Error), "\n", "\n    "))
	}
	if r.Skipped != "" {
		return fmt.Sprintf("%s: skipped: %s", r.Key, r.Skipped)
	}
	line := fmt.Sprintf("%s: %s [%.1fs]", r.Key, HeadlineFigures(k, r), r.Seconds)
	for _, w := range r.Warnings {
		line += "; WARNING: " + w
	}
	return line
}

// HeadlineFigures are a measured point's headline metrics with their
// model's figure, labelled as a prediction made before the point ran or a
// fit on the other combinations, and its error: "tps 5594 (predicted
// 5400, +4%), errors 0".
func HeadlineFigures(k workload.Kind, r workload.Result) string {
	var parts []string
	for _, f := range Headlines(k, r) {
		s := f.Label + " " + f.Text
		if f.Model != nil {
			s += fmt.Sprintf(" (%s %s, %+.0f%%)", f.ModelFrom, f.ModelText, PercentError(f.Measured, *f.Model))
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, ", ")
}

// Headline is one of a point's headline metrics, with its model's figure
// when the point has one.
type Headline struct {
	Name     string   `json:"name"`
	Label    string   `json:"label"`
	Measured float64  `json:"measured"`
	Text     string   `json:"text"`
	Model    *float64 `json:"model,omitempty"`
	// ModelText is Model as Text shows Measured.
	ModelText string `json:"model_text,omitempty"`
	// ModelFrom says what Model is: "predicted" before the point ran, or
	// a "fit" on the other combinations.
	ModelFrom string `json:"model_from,omitempty"`
}

// Headlines are a measured point's headline metrics, at most four: the
// workload's declared ones, else the modelled ones, else all of them.
func Headlines(k workload.Kind, r workload.Result) []Headline {
	format := func(name string, v float64) string {
		if m, ok := k.Metric(name); ok {
			return m.Format(v)
		}
		return FormatMetric(name, v)
	}
	var names []string
	for _, m := range k.Metrics {
		if _, ok := r.Metrics[m.Name]; ok && m.Headline {
			names = append(names, m.Name)
		}
	}
	if len(names) == 0 {
		for name := range r.Metrics {
			if _, modelled := r.Model[name]; modelled || len(r.Model) == 0 {
				names = append(names, name)
			}
		}
		sort.Strings(names)
	}
	var out []Headline
	for _, name := range names[:min(len(names), 4)] {
		v := r.Metrics[name]
		f := Headline{Name: name, Label: workload.MetricLabel(name), Measured: v, Text: format(name, v)}
		if m, ok := r.Model[name]; ok {
			f.Model, f.ModelText, f.ModelFrom = &m, format(name, m), r.ModelFrom(name)
		}
		out = append(out, f)
	}
	return out
}

// LineProgress writes one line per finished point (and a heartbeat on long
// points), for pipes and CI logs.
type LineProgress struct {
	W     io.Writer
	mu    sync.Mutex
	n     int
	total int
	last  time.Time
	key   string
	steps steps
}

// steps numbers a point's phases: a workload reports each phase's
// progress from zero (loading, then querying), so a fall in the share done
// starts the next step rather than showing progress going backwards.
type steps struct {
	n    int
	last float64
}

// at records done of total and says which step it belongs to ("" for the
// first of a point).
func (s *steps) at(done, total int64) string {
	share := float64(done) / float64(total)
	if s.n == 0 {
		s.n = 1
	} else if share < s.last {
		s.n++
	}
	s.last = share
	if s.n == 1 {
		return ""
	}
	return fmt.Sprintf("step %d: ", s.n)
}

func (p *LineProgress) Start(points, skipped int) {
	if skipped > 0 {
		fmt.Fprintf(p.W, "%d of %d points already done, resuming\n", skipped, points)
	}
}

func (p *LineProgress) StartPoint(n, total int, key string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.n, p.total, p.key, p.last, p.steps = n, total, key, time.Now(), steps{}
}

func (p *LineProgress) Note(msg string) {}

func (p *LineProgress) Update(done, total int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if total <= 0 {
		return
	}
	step := p.steps.at(done, total)
	if time.Since(p.last) >= 10*time.Second {
		p.last = time.Now()
		fmt.Fprintf(p.W, "[%d/%d] %s: %s%d%%\n", p.n, p.total, p.key, step, done*100/total)
	}
}

func (p *LineProgress) EndPoint(line string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(p.W, "[%d/%d] %s\n", p.n, p.total, line)
}

func (p *LineProgress) Close() {}

// BarProgress draws two bars on a terminal: the whole plan and the point
// under way; finished points print above them.
type BarProgress struct {
	W       io.Writer
	mu      sync.Mutex
	p       *mpb.Progress
	overall *mpb.Bar
	point   *mpb.Bar
	label   string
	step    string
	steps   steps
	n       int
	total   int
}

func (b *BarProgress) Start(points, skipped int) {
	b.p = mpb.New(mpb.WithOutput(b.W), mpb.WithWidth(40), mpb.WithRefreshRate(150*time.Millisecond))
	b.overall = b.p.AddBar(int64(points),
		mpb.PrependDecorators(decor.Name("study ", decor.WCSyncSpaceR), decor.CountersNoUnit("%d/%d points", decor.WCSyncSpace)),
		mpb.AppendDecorators(decor.Elapsed(decor.ET_STYLE_GO, decor.WCSyncSpace)),
	)
	b.overall.SetCurrent(int64(skipped))
}

func (b *BarProgress) StartPoint(n, total int, key string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.n, b.total, b.label, b.step, b.steps = n, total, key, "", steps{}
	if b.point != nil {
		b.point.Abort(true)
	}
	b.point = b.p.AddBar(0,
		mpb.PrependDecorators(decor.Any(func(decor.Statistics) string {
			b.mu.Lock()
			defer b.mu.Unlock()
			return b.label + strings.TrimSuffix(" ("+strings.TrimSuffix(b.step, ": ")+")", " ()")
		}, decor.WCSyncSpaceR)),
		mpb.AppendDecorators(decor.Percentage(decor.WCSyncSpace)),
		mpb.BarRemoveOnComplete(),
	)
}

func (b *BarProgress) Note(msg string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !strings.Contains(b.label, msg) {
		b.label += " (" + msg + ")"
	}
}

func (b *BarProgress) Update(done, total int64) {
	b.mu.Lock()
	bar := b.point
	if total > 0 {
		b.step = b.steps.at(done, total)
	}
	b.mu.Unlock()
	if bar != nil && total > 0 {
		bar.SetTotal(total, false)
		bar.SetCurrent(done)
	}
}

func (b *BarProgress) EndPoint(pointLine string) {
	b.mu.Lock()
	if b.point != nil {
		b.point.Abort(true)
		b.point = nil
	}
	line := fmt.Sprintf("[%d/%d] %s\n", b.n, b.total, pointLine)
	b.mu.Unlock()
	fmt.Fprint(b.p, line) // printed above the bars
	b.overall.Increment()
}

func (b *BarProgress) Close() {
	if b.p == nil {
		return
	}
	b.mu.Lock()
	if b.point != nil {
		b.point.Abort(true)
	}
	b.mu.Unlock()
	b.overall.Abort(false)
	b.p.Wait()
}
