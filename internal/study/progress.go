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
)

// Progress shows a run's progress: bars on a terminal, plain lines when
// the output is a pipe or a file.
type Progress interface {
	Start(points, skipped int)
	StartPoint(n, total int, key string)
	Note(msg string)
	Update(done, total int64)
	EndPoint(r Result)
	Close()
}

type nopProgress struct{}

func (nopProgress) Start(int, int)              {}
func (nopProgress) StartPoint(int, int, string) {}
func (nopProgress) Note(string)                 {}
func (nopProgress) Update(int64, int64)         {}
func (nopProgress) EndPoint(Result)             {}
func (nopProgress) Close()                      {}

// PointLine describes a finished point in one line: its key, headline
// metrics, the model's prediction and the error.
func PointLine(r Result) string {
	if !r.OK() {
		// The whole error, once: the run's last message does not repeat it.
		return fmt.Sprintf("%s: FAILED: %s", r.Key, strings.ReplaceAll(strings.TrimSpace(r.Error), "\n", "\n    "))
	}
	if r.Skipped != "" {
		return fmt.Sprintf("%s: skipped: %s", r.Key, r.Skipped)
	}
	var parts []string
	names := make([]string, 0, len(r.Metrics))
	for k := range r.Metrics {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		if _, modelled := r.Model[k]; !modelled && len(r.Model) > 0 {
			continue
		}
		s := k + " " + FormatMetric(k, r.Metrics[k])
		if m, ok := r.Model[k]; ok {
			s += fmt.Sprintf(" (model %s, %+.0f%%)", FormatMetric(k, m), PercentError(r.Metrics[k], m))
		}
		parts = append(parts, s)
	}
	if len(parts) > 4 {
		parts = parts[:4]
	}
	return fmt.Sprintf("%s: %s [%.1fs]", r.Key, strings.Join(parts, ", "), r.Seconds)
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
}

func (p *LineProgress) Start(points, skipped int) {
	if skipped > 0 {
		fmt.Fprintf(p.W, "%d of %d points already done, resuming\n", skipped, points)
	}
}

func (p *LineProgress) StartPoint(n, total int, key string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.n, p.total, p.key, p.last = n, total, key, time.Now()
}

func (p *LineProgress) Note(msg string) {}

func (p *LineProgress) Update(done, total int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if time.Since(p.last) >= 10*time.Second && total > 0 {
		p.last = time.Now()
		fmt.Fprintf(p.W, "[%d/%d] %s: %d%%\n", p.n, p.total, p.key, done*100/total)
	}
}

func (p *LineProgress) EndPoint(r Result) {
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(p.W, "[%d/%d] %s\n", p.n, p.total, PointLine(r))
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
	b.n, b.total, b.label = n, total, key
	if b.point != nil {
		b.point.Abort(true)
	}
	b.point = b.p.AddBar(0,
		mpb.PrependDecorators(decor.Any(func(decor.Statistics) string {
			b.mu.Lock()
			defer b.mu.Unlock()
			return b.label
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
	b.mu.Unlock()
	if bar != nil && total > 0 {
		bar.SetTotal(total, false)
		bar.SetCurrent(done)
	}
}

func (b *BarProgress) EndPoint(r Result) {
	b.mu.Lock()
	if b.point != nil {
		b.point.Abort(true)
		b.point = nil
	}
	line := fmt.Sprintf("[%d/%d] %s\n", b.n, b.total, PointLine(r))
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
