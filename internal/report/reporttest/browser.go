package reporttest

import (
	"context"
	_ "embed" // the layout check's script
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// This file checks a written HTML report in a real browser: headless
// Chromium, driven over the DevTools protocol by chromedp (no Node, no
// WebDriver), through a pipe, so Chromium listens on no port. It is for
// tests (this package's and end-to-end ones); dbrig itself never starts a
// browser.

// ErrNoChromium is returned by [FindChromium] and [CheckInBrowser] when no
// Chromium binary can be found. Tests skip on it locally and fail on it in CI.
var ErrNoChromium = errors.New("no Chromium found (install Debian's chromium package, or set DBRIG_CHROMIUM to a Chromium binary)")

// FindChromium returns the path of a Chromium (or Chrome) binary: the one
// named by $DBRIG_CHROMIUM, else the first of chromium, chromium-browser,
// google-chrome on PATH.
func FindChromium() (string, error) {
	if p := os.Getenv("DBRIG_CHROMIUM"); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("DBRIG_CHROMIUM=%s: %w", p, err)
		}
		return p, nil
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", ErrNoChromium
}

// BrowserCheck is what a browser saw of a report.
type BrowserCheck struct {
	// ConsoleErrors are console.error calls, uncaught exceptions and
	// browser log entries of level error, in order.
	ConsoleErrors []string
	// ExternalRequests are requests the page made beyond its own file
	// (anything but file:, data:, blob: and about:). A report makes none.
	ExternalRequests []string
	// Charts is every chart container in the page, in order.
	Charts []ChartStatus
	// Rendered counts the charts drawn with data (ChartStatus.OK).
	Rendered int
	// Wide lists the elements that reach beyond the window's width, which
	// a reader cannot see without scrolling the whole page sideways.
	Wide []string
	// Screenshot is the path of the full-page PNG.
	Screenshot string
}

// ChartStatus is one chart container as the browser drew it.
type ChartStatus struct {
	ID       string `json:"id"`
	Instance bool   `json:"instance"` // an echarts instance is bound to it
	Painted  bool   `json:"painted"`  // its canvas has non-blank pixels
	Points   int    `json:"points"`   // data items over all its series
	Finished bool   `json:"finished"` // echarts reported the drawing finished
	Layout
}

// Layout is what a reader would find wrong in a drawn chart.
type Layout struct {
	// Axes are its value y axes with the tick labels they can show apart.
	Axes []AxisTicks `json:"axes"`
	// Flat lists series that lie flat because a series of another unit
	// sets the scale of the axis they share.
	Flat []string `json:"flat"`
	// Legend lists legend entries naming no series, series missing from
	// the legend, and series named after a metric they do not draw.
	Legend []string `json:"legend"`
	// Clipped lists text drawn beyond the chart's box, which its canvas cuts.
	Clipped []string `json:"clipped"`
}

// AxisTicks is one y axis and how many of its tick labels can be read:
// those at least a label's height apart.
type AxisTicks struct {
	Index  int     `json:"index"`
	Name   string  `json:"name"`
	Ticks  int     `json:"ticks"`
	Length float64 `json:"length"` // px
}

// minTicks is the fewest tick labels a y axis needs to be read: with two a
// reader sees a range, not a scale, and with one a flat strip.
const minTicks = 3

// OK reports whether the chart was drawn with data.
func (c ChartStatus) OK() bool { return c.Instance && c.Painted && c.Points > 0 }

// Problems lists what is wrong with the page; none means it loaded cleanly,
// offline, with every chart drawn.
func (b BrowserCheck) Problems() []string {
	var ps []string
	for _, e := range b.ConsoleErrors {
		ps = append(ps, "console error: "+e)
	}
	for _, u := range b.ExternalRequests {
		ps = append(ps, "request beyond the file: "+u)
	}
	for _, c := range b.Charts {
		if !c.OK() {
			ps = append(ps, fmt.Sprintf("chart %q not drawn (instance=%v painted=%v points=%d)", c.ID, c.Instance, c.Painted, c.Points))
		}
		ps = append(ps, c.Layout.problems(c.ID)...)
	}
	for _, w := range b.Wide {
		ps = append(ps, "wider than the window: "+w)
	}
	return ps
}

func (l Layout) problems(chart string) []string {
	var ps []string
	for _, a := range l.Axes {
		if a.Ticks < minTicks {
			ps = append(ps, fmt.Sprintf("chart %q: y axis %d (%q) shows %d tick label(s) over %.0f px, want at least %d", chart, a.Index, a.Name, a.Ticks, a.Length, minTicks))
		}
	}
	for _, group := range [][]string{l.Flat, l.Legend, l.Clipped} {
		for _, p := range group {
			ps = append(ps, fmt.Sprintf("chart %q: %s", chart, p))
		}
	}
	return ps
}

// Browser window size for the check and the screenshot.
const (
	browserWidth     = 1280
	browserHeight    = 900
	maxScreenshotPix = 16000 // tallest full-page screenshot, in CSS pixels
)

// chartStatusJS reports every chart container of the page as JSON.
const chartStatusJS = `(() => {
  const out = [];
  for (const el of document.querySelectorAll("[data-chart]")) {
    const inst = window.echarts ? echarts.getInstanceByDom(el) : null;
    let points = 0;
    if (inst) for (const s of (inst.getOption().series || [])) points += (s.data || []).length;
    let painted = false;
    const cv = el.querySelector("canvas");
    if (cv && cv.width > 0 && cv.height > 0) {
      const d = cv.getContext("2d").getImageData(0, 0, cv.width, cv.height).data;
      for (let i = 3; i < d.length; i += 4 * 7) if (d[i] !== 0) { painted = true; break; }
    }
    out.push({id: el.id, instance: !!inst, painted, points, finished: el.getAttribute("data-rendered") === "1"});
  }
  return out;
})()`

// layoutJS reads every drawn chart's [Layout] and the elements wider than
// the window, as JSON.
//
//go:embed layout.js
var layoutJS string

// pageLayout is what layoutJS returns.
type pageLayout struct {
	Charts []struct {
		ID string `json:"id"`
		Layout
	} `json:"charts"`
	Wide []string `json:"wide"`
}

// CheckInBrowser opens the HTML report at htmlPath in headless Chromium
// with a new profile (or, after [ShareBrowser], in a new tab and browser
// context of the shared Chromium), waits for its charts to draw, and saves
// a full-page screenshot to pngPath. It returns what the browser saw; an
// error means the check itself could not run (no Chromium:
// [ErrNoChromium]). Chromium and everything it started (or the shared
// Chromium's tab) are killed before it returns, also when ctx is
// cancelled.
func CheckInBrowser(ctx context.Context, htmlPath, pngPath string) (BrowserCheck, error) {
	var res BrowserCheck
	abs, err := filepath.Abs(htmlPath)
	if err != nil {
		return res, fmt.Errorf("check %s in a browser: %w", htmlPath, err)
	}
	if _, err := os.Stat(abs); err != nil {
		return res, fmt.Errorf("check %s in a browser: %w", htmlPath, err)
	}
	bin, err := FindChromium()
	if err != nil {
		return res, err
	}
	b, err := newPage(ctx, bin)
	if err != nil {
		return res, fmt.Errorf("check %s in a browser: %w", htmlPath, err)
	}
	defer b.stop()
	res, err = b.check(ctx, abs, pngPath)
	if err != nil {
		return res, fmt.Errorf("check %s in a browser: %w%s", htmlPath, err, b.outputTail())
	}
	return res, nil
}

// browser is one headless Chromium that chromedp runs, with one tab; or,
// from openTab, one tab of another's Chromium (pid 0, no profile).
type browser struct {
	tab     context.Context // chromedp's context of the tab
	cancel  func()          // closes the tab, kills Chromium and waits for it
	pid     int             // Chromium's, which leads its process group
	profile string
	output  *tailBuffer
	once    sync.Once

	mu     sync.Mutex
	events BrowserCheck // ConsoleErrors and ExternalRequests, filled by events
}

func startChromium(ctx context.Context, bin string) (*browser, error) {
	profile, err := os.MkdirTemp("", "dbrig-chromium-")
	if err != nil {
		return nil, fmt.Errorf("start chromium: %w", err)
	}
	// Chromium puts its singleton socket (org.chromium.Chromium.*) and, with
	// --disable-dev-shm-usage, its shared memory in TMPDIR, and removes them
	// only on a clean exit, which SIGKILL is not: inside the profile they go
	// with it.
	tmp := filepath.Join(profile, "tmp")
	if err := os.Mkdir(tmp, 0o700); err != nil {
		_ = os.RemoveAll(profile)
		return nil, fmt.Errorf("start chromium: %w", err)
	}
	b := &browser{profile: profile, output: &tailBuffer{max: 4096}}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(bin),
		chromedp.NoSandbox, // dbrig's tests may run as root, where the sandbox refuses to start
		chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.WindowSize(browserWidth, browserHeight),
		chromedp.UserDataDir(profile),
		chromedp.Env("TMPDIR="+tmp),
		chromedp.CombinedOutput(b.output),
		// Its own process group, so that stop kills Chromium and every
		// process it started; and killed with the test binary if that dies
		// first (chromedp starts it from a thread locked for its life, as
		// Pdeathsig needs).
		chromedp.ModifyCmdFunc(func(cmd *exec.Cmd) {
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
		}),
	)
	alloc, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	tab, cancelTab := chromedp.NewContext(alloc, chromedp.WithListener(b.event))
	b.tab = tab
	b.cancel = func() { cancelTab(); cancelAlloc() }
	// The first command starts Chromium and opens the tab, which lives as
	// long as the context that command gets: the tab's own.
	err = resize(tab, browserWidth, browserHeight)
	if c := chromedp.FromContext(tab); c.Browser != nil && c.Browser.Process() != nil {
		b.pid = c.Browser.Process().Pid
	}
	if err != nil {
		err = fmt.Errorf("start %s: %w%s", bin, err, b.outputTail())
		b.stop()
		return nil, err
	}
	return b, nil
}

// stop kills Chromium's process group, lets chromedp wait for Chromium,
// and removes the profile. It may be called more than once.
func (b *browser) stop() {
	b.once.Do(func() {
		if b.pid > 0 {
			_ = syscall.Kill(-b.pid, syscall.SIGKILL)
		}
		b.cancel()
		if b.profile != "" {
			_ = os.RemoveAll(b.profile)
		}
	})
}

func (b *browser) outputTail() string {
	if s := strings.TrimSpace(b.output.String()); s != "" {
		return "\nchromium said:\n" + s
	}
	return ""
}

// event collects console errors and requests beyond the file.
func (b *browser) event(ev any) {
	var msg string
	switch ev := ev.(type) {
	case *runtime.EventConsoleAPICalled:
		if ev.Type != runtime.ConsoleAPICalledTypeError && ev.Type != runtime.ConsoleAPICalledTypeAssert {
			return
		}
		msg = "console." + string(ev.Type) + ": " + strings.Join(argTexts(ev.Args), " ")
	case *runtime.EventExceptionThrown:
		d := ev.ExceptionDetails
		text := d.Text
		if d.Exception != nil && d.Exception.Description != "" {
			text += " " + d.Exception.Description
		}
		msg = fmt.Sprintf("exception at line %d: %s", d.LineNumber+1, text)
	case *log.EventEntryAdded:
		if ev.Entry.Level != log.EntryLevelError {
			return
		}
		msg = string(ev.Entry.Source) + ": " + ev.Entry.Text
		if ev.Entry.URL != "" {
			msg += " (" + ev.Entry.URL + ")"
		}
	case *network.EventRequestWillBeSent:
		u, err := url.Parse(ev.Request.URL)
		if err != nil || (u.Scheme != "file" && u.Scheme != "data" && u.Scheme != "blob" && u.Scheme != "about") {
			b.mu.Lock()
			b.events.ExternalRequests = append(b.events.ExternalRequests, ev.Request.URL)
			b.mu.Unlock()
		}
		return
	default:
		return
	}
	b.mu.Lock()
	b.events.ConsoleErrors = append(b.events.ConsoleErrors, msg)
	b.mu.Unlock()
}

// argTexts shows a console call's arguments: a primitive by its value, an
// object by its description.
func argTexts(args []*runtime.RemoteObject) []string {
	var parts []string
	for _, a := range args {
		var v any
		if len(a.Value) > 0 && json.Unmarshal(a.Value, &v) == nil && v != nil {
			parts = append(parts, fmt.Sprint(v))
		} else {
			parts = append(parts, a.Description)
		}
	}
	return parts
}

// check opens the page, waits for the charts and takes the screenshot.
func (b *browser) check(ctx context.Context, abs, pngPath string) (BrowserCheck, error) {
	if err := b.open(ctx, abs); err != nil {
		return BrowserCheck{}, err
	}
	return b.checkOpen(ctx, pngPath)
}

// checkOpen checks the page open in the tab: its charts and their layout,
// wide elements, the screenshot, console errors and requests.
func (b *browser) checkOpen(ctx context.Context, pngPath string) (BrowserCheck, error) {
	var res BrowserCheck
	charts, err := b.waitCharts(ctx)
	if err != nil {
		return res, err
	}
	var layout pageLayout
	if err := b.evaluate(ctx, layoutJS, &layout); err != nil {
		return res, fmt.Errorf("read the layout: %w", err)
	}
	byID := map[string]Layout{}
	for _, c := range layout.Charts {
		byID[c.ID] = c.Layout
	}
	for i := range charts {
		charts[i].Layout = byID[charts[i].ID]
		if charts[i].OK() {
			res.Rendered++
		}
	}
	res.Charts, res.Wide = charts, layout.Wide
	if err := b.screenshot(ctx, pngPath); err != nil {
		return res, err
	}
	res.Screenshot = pngPath

	b.mu.Lock()
	res.ConsoleErrors = append([]string(nil), b.events.ConsoleErrors...)
	res.ExternalRequests = append([]string(nil), b.events.ExternalRequests...)
	b.mu.Unlock()
	return res, nil
}

// inTab returns the tab's context, ended also when ctx ends: chromedp
// runs actions on its own contexts.
func (b *browser) inTab(ctx context.Context) (context.Context, context.CancelFunc) {
	tab, cancel := context.WithCancel(b.tab)
	stop := context.AfterFunc(ctx, cancel)
	return tab, func() { stop(); cancel() }
}

// open loads the file at abs in the tab and waits for its load event.
func (b *browser) open(ctx context.Context, abs string) error {
	tab, done := b.inTab(ctx)
	defer done()
	fileURL := (&url.URL{Scheme: "file", Path: filepath.ToSlash(abs)}).String()
	if err := chromedp.Do(tab, chromedp.Navigate(fileURL)); err != nil {
		return fmt.Errorf("open %s: %w", fileURL, err)
	}
	return nil
}

func (b *browser) setViewport(ctx context.Context, width, height int) error {
	tab, done := b.inTab(ctx)
	defer done()
	return resize(tab, width, height)
}

// resize sizes the page only: chromedp's EmulateViewport also resets touch
// emulation, a second round trip that slowed each resize.
func resize(tab context.Context, width, height int) error {
	viewport := emulation.SetDeviceMetricsOverrideParams{Width: int64(width), Height: int64(height), DeviceScaleFactor: 1}
	_, err := chromedp.Call(tab, emulation.SetDeviceMetricsOverride, viewport)
	return err
}

// waitCharts waits until every chart reports its drawing finished
// (animations included), or gives up after a while, and returns the charts'
// state.
func (b *browser) waitCharts(ctx context.Context) ([]ChartStatus, error) {
	deadline := time.Now().Add(10 * time.Second)
	for {
		var charts []ChartStatus
		if err := b.evaluate(ctx, chartStatusJS, &charts); err != nil {
			return nil, fmt.Errorf("read the charts' state: %w", err)
		}
		// Charts are set up by the page's own script before the load event:
		// one with no echarts instance by now will never get one.
		done := true
		for _, ch := range charts {
			done = done && (!ch.Instance || ch.OK() && ch.Finished)
		}
		if done || time.Now().After(deadline) {
			return charts, nil
		}
		select {
		case <-ctx.Done():
			return charts, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// evaluate runs a JavaScript expression in the page, awaiting a promise,
// and decodes its value into out.
func (b *browser) evaluate(ctx context.Context, expr string, out any) error {
	tab, done := b.inTab(ctx)
	defer done()
	v, err := chromedp.Run(tab, chromedp.Evaluate[[]byte](expr, chromedp.EvalAwaitPromise))
	if err != nil {
		return fmt.Errorf("evaluate in the page: %w", err)
	}
	if err := json.Unmarshal(v, out); err != nil {
		return fmt.Errorf("evaluate in the page: decode %s: %w", v, err)
	}
	return nil
}

// screenshot grows the viewport to the page's height (so nothing is cut
// and the charts keep their width) and saves a PNG of it.
func (b *browser) screenshot(ctx context.Context, pngPath string) error {
	tab, done := b.inTab(ctx)
	defer done()
	m, err := chromedp.Call(tab, page.GetLayoutMetrics, cdp.Empty{})
	if err != nil {
		return err
	}
	h := browserHeight
	if m.CSSContentSize != nil {
		h = int(m.CSSContentSize.Height + 0.5)
	}
	h = min(max(h, browserHeight), maxScreenshotPix)
	if err := resize(tab, browserWidth, h); err != nil {
		return err
	}
	beyond := true
	shot, err := chromedp.Call(tab, page.CaptureScreenshot, page.CaptureScreenshotParams{Format: page.CaptureScreenshotFormatPng, CaptureBeyondViewport: &beyond})
	if err != nil {
		return err
	}
	if err := os.WriteFile(pngPath, shot.Data, 0o644); err != nil {
		return fmt.Errorf("save screenshot: %w", err)
	}
	return nil
}

// Screenshot saves a PNG of the HTML page at htmlPath, once its charts
// have drawn, as a 1280 px window shows it: from the top of the element
// with id from (the page's top when from is ""), at most height CSS px
// tall; a picture for the docs, kept small by its crop.
func Screenshot(ctx context.Context, htmlPath, from, pngPath string, height int) error {
	abs, err := filepath.Abs(htmlPath)
	if err != nil {
		return fmt.Errorf("screenshot %s: %w", htmlPath, err)
	}
	bin, err := FindChromium()
	if err != nil {
		return err
	}
	b, err := newPage(ctx, bin)
	if err != nil {
		return fmt.Errorf("screenshot %s: %w", htmlPath, err)
	}
	defer b.stop()
	if err := b.open(ctx, abs); err != nil {
		return fmt.Errorf("screenshot %s: %w", htmlPath, err)
	}
	if _, err := b.waitCharts(ctx); err != nil {
		return fmt.Errorf("screenshot %s: %w", htmlPath, err)
	}
	top := 0.0
	if from != "" {
		idJSON, _ := json.Marshal(from)
		var found *float64
		js := `(() => { const e = document.getElementById(` + string(idJSON) + `); return e ? e.getBoundingClientRect().top + window.scrollY : null; })()`
		if err := b.evaluate(ctx, js, &found); err != nil {
			return fmt.Errorf("screenshot %s: %w", htmlPath, err)
		}
		if found == nil {
			return fmt.Errorf("screenshot %s: no element with id %q", htmlPath, from)
		}
		top = *found
	}
	tab, done := b.inTab(ctx)
	defer done()
	beyond := true
	clip := &page.Viewport{X: 0, Y: top, Width: browserWidth, Height: float64(height), Scale: 1}
	shot, err := chromedp.Call(tab, page.CaptureScreenshot, page.CaptureScreenshotParams{Format: page.CaptureScreenshotFormatPng, Clip: clip, CaptureBeyondViewport: &beyond})
	if err != nil {
		return fmt.Errorf("screenshot %s: %w", htmlPath, err)
	}
	return os.WriteFile(pngPath, shot.Data, 0o644)
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append(t.buf[:0:0], t.buf[over:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}
