package reporttest

import (
	"context"
	"encoding/base64"
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
)

// This file checks a written HTML report in a real browser: headless
// Chromium, driven over the DevTools protocol (no Node, no WebDriver). It is
// for tests (this package's and end-to-end ones); dbrig itself never starts
// a browser.

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
}

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
  return JSON.stringify(out);
})()`

// CheckInBrowser opens the HTML report at htmlPath in headless Chromium
// with a new profile, waits for its charts to draw, and saves a full-page
// screenshot to pngPath. It returns what the browser saw; an error means
// the check itself could not run (no Chromium: [ErrNoChromium]). Chromium
// and everything it started are killed before it returns, also when ctx
// is cancelled.
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
	b, err := startChromium(ctx, bin)
	if err != nil {
		return res, fmt.Errorf("check %s in a browser: %w", htmlPath, err)
	}
	defer b.stop()
	res, err = b.check(ctx, abs, pngPath)
	if err != nil {
		return res, fmt.Errorf("check %s in a browser: %w%s", htmlPath, err, b.stderrTail())
	}
	return res, nil
}

// browser is one running headless Chromium with a DevTools connection.
type browser struct {
	cmd     *exec.Cmd
	profile string
	exited  chan struct{} // closed when the process has been waited for
	stderr  *tailBuffer
	conn    *cdpConn
	once    sync.Once

	mu      sync.Mutex
	session string
	events  BrowserCheck // ConsoleErrors and ExternalRequests, filled by events
	loaded  chan struct{}
	loadOne sync.Once
}

func startChromium(ctx context.Context, bin string) (*browser, error) {
	profile, err := os.MkdirTemp("", "dbrig-chromium-")
	if err != nil {
		return nil, fmt.Errorf("start chromium: %w", err)
	}
	b := &browser{profile: profile, exited: make(chan struct{}), stderr: &tailBuffer{max: 4096}, loaded: make(chan struct{})}
	b.cmd = exec.Command(bin,
		"--headless",
		"--no-sandbox", // dbrig's tests may run as root, where the sandbox refuses to start
		"--disable-gpu",
		"--disable-quic",
		"--disable-dev-shm-usage",
		"--no-first-run",
		"--no-default-browser-check",
		"--disable-background-networking",
		"--disable-component-update",
		"--disable-sync",
		"--disable-extensions",
		"--hide-scrollbars",
		"--mute-audio",
		fmt.Sprintf("--window-size=%d,%d", browserWidth, browserHeight),
		"--remote-debugging-address=127.0.0.1",
		"--remote-debugging-port=0",
		"--user-data-dir="+profile,
		"about:blank",
	)
	// Chromium puts its singleton socket (org.chromium.Chromium.*) and, with
	// --disable-dev-shm-usage, its shared memory in TMPDIR, and removes them
	// only on a clean exit, which SIGKILL is not: inside the profile they go
	// with it.
	tmp := filepath.Join(profile, "tmp")
	if err := os.Mkdir(tmp, 0o700); err != nil {
		_ = os.RemoveAll(profile)
		return nil, fmt.Errorf("start chromium: %w", err)
	}
	b.cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
	// Its own process group, so that stop kills Chromium and every process
	// it started; and killed with the test binary if that dies first.
	b.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	b.cmd.Stdout = b.stderr
	b.cmd.Stderr = b.stderr
	if err := b.cmd.Start(); err != nil {
		_ = os.RemoveAll(profile)
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	go func() {
		_ = b.cmd.Wait()
		close(b.exited)
	}()
	wsURL, err := b.devtoolsURL(ctx)
	if err != nil {
		b.stop()
		return nil, fmt.Errorf("start %s: %w%s", bin, err, b.stderrTail())
	}
	b.conn, err = dialCDP(ctx, wsURL, b.event)
	if err != nil {
		b.stop()
		return nil, err
	}
	return b, nil
}

// devtoolsURL waits for Chromium to write the DevToolsActivePort file in
// its profile (the port it chose, and the browser's websocket path).
func (b *browser) devtoolsURL(ctx context.Context) (string, error) {
	path := filepath.Join(b.profile, "DevToolsActivePort")
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		if data, err := os.ReadFile(path); err == nil {
			lines := strings.Fields(string(data))
			if len(lines) >= 2 {
				return "ws://127.0.0.1:" + lines[0] + lines[1], nil
			}
		}
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("wait for DevToolsActivePort: %w", ctx.Err())
		case <-b.exited:
			return "", fmt.Errorf("chromium exited before it listened (%s)", b.cmd.ProcessState)
		case <-tick.C:
		}
	}
}

// stop closes the connection, kills Chromium's process group, waits for it
// and removes its profile. It may be called more than once.
func (b *browser) stop() {
	b.once.Do(func() {
		if b.conn != nil {
			b.conn.close()
		}
		if b.cmd.Process != nil {
			_ = syscall.Kill(-b.cmd.Process.Pid, syscall.SIGKILL)
			<-b.exited
		}
		_ = os.RemoveAll(b.profile)
	})
}

func (b *browser) stderrTail() string {
	if s := strings.TrimSpace(b.stderr.String()); s != "" {
		return "\nchromium said:\n" + s
	}
	return ""
}

// event collects console errors and requests beyond the file.
func (b *browser) event(method, session string, params json.RawMessage) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if session != b.session || b.session == "" {
		return
	}
	switch method {
	case "Page.loadEventFired":
		b.loadOne.Do(func() { close(b.loaded) })
	case "Runtime.consoleAPICalled":
		var p struct {
			Type string `json:"type"`
			Args []struct {
				Value       any    `json:"value"`
				Description string `json:"description"`
			} `json:"args"`
		}
		if json.Unmarshal(params, &p) != nil || (p.Type != "error" && p.Type != "assert") {
			return
		}
		var parts []string
		for _, a := range p.Args {
			if a.Value != nil {
				parts = append(parts, fmt.Sprint(a.Value))
			} else {
				parts = append(parts, a.Description)
			}
		}
		b.events.ConsoleErrors = append(b.events.ConsoleErrors, "console."+p.Type+": "+strings.Join(parts, " "))
	case "Runtime.exceptionThrown":
		var p struct {
			Details struct {
				Text      string `json:"text"`
				URL       string `json:"url"`
				Line      int    `json:"lineNumber"`
				Exception struct {
					Description string `json:"description"`
				} `json:"exception"`
			} `json:"exceptionDetails"`
		}
		if json.Unmarshal(params, &p) != nil {
			return
		}
		msg := p.Details.Text
		if p.Details.Exception.Description != "" {
			msg += " " + p.Details.Exception.Description
		}
		b.events.ConsoleErrors = append(b.events.ConsoleErrors, fmt.Sprintf("exception at line %d: %s", p.Details.Line+1, msg))
	case "Log.entryAdded":
		var p struct {
			Entry struct {
				Level  string `json:"level"`
				Source string `json:"source"`
				Text   string `json:"text"`
				URL    string `json:"url"`
			} `json:"entry"`
		}
		if json.Unmarshal(params, &p) != nil || p.Entry.Level != "error" {
			return
		}
		msg := p.Entry.Source + ": " + p.Entry.Text
		if p.Entry.URL != "" {
			msg += " (" + p.Entry.URL + ")"
		}
		b.events.ConsoleErrors = append(b.events.ConsoleErrors, msg)
	case "Network.requestWillBeSent":
		var p struct {
			Request struct {
				URL string `json:"url"`
			} `json:"request"`
		}
		if json.Unmarshal(params, &p) != nil {
			return
		}
		u, err := url.Parse(p.Request.URL)
		if err != nil || (u.Scheme != "file" && u.Scheme != "data" && u.Scheme != "blob" && u.Scheme != "about") {
			b.events.ExternalRequests = append(b.events.ExternalRequests, p.Request.URL)
		}
	}
}

// check opens the page in a new tab, waits for the charts and takes the
// screenshot.
func (b *browser) check(ctx context.Context, abs, pngPath string) (BrowserCheck, error) {
	var res BrowserCheck
	if err := b.open(ctx, abs); err != nil {
		return res, err
	}
	charts, err := b.waitCharts(ctx)
	if err != nil {
		return res, err
	}
	res.Charts = charts
	for _, ch := range res.Charts {
		if ch.OK() {
			res.Rendered++
		}
	}
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

// open makes a new tab, attaches to it, and loads the file at abs in it.
func (b *browser) open(ctx context.Context, abs string) error {
	c := b.conn
	var target struct {
		TargetID string `json:"targetId"`
	}
	if err := c.call(ctx, "", "Target.createTarget", map[string]any{"url": "about:blank"}, &target); err != nil {
		return err
	}
	var attached struct {
		SessionID string `json:"sessionId"`
	}
	if err := c.call(ctx, "", "Target.attachToTarget", map[string]any{"targetId": target.TargetID, "flatten": true}, &attached); err != nil {
		return err
	}
	s := attached.SessionID
	b.mu.Lock()
	b.session = s
	b.mu.Unlock()
	for _, m := range []string{"Runtime.enable", "Log.enable", "Page.enable", "Network.enable"} {
		if err := c.call(ctx, s, m, nil, nil); err != nil {
			return err
		}
	}
	if err := b.setViewport(ctx, browserWidth, browserHeight); err != nil {
		return err
	}
	fileURL := (&url.URL{Scheme: "file", Path: filepath.ToSlash(abs)}).String()
	var nav struct {
		ErrorText string `json:"errorText"`
	}
	if err := c.call(ctx, s, "Page.navigate", map[string]any{"url": fileURL}, &nav); err != nil {
		return err
	}
	if nav.ErrorText != "" {
		return fmt.Errorf("open %s: %s", fileURL, nav.ErrorText)
	}
	select {
	case <-b.loaded:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("wait for %s to load: %w", fileURL, ctx.Err())
	}
}

func (b *browser) setViewport(ctx context.Context, width, height int) error {
	viewport := map[string]any{"width": width, "height": height, "deviceScaleFactor": 1, "mobile": false}
	return b.conn.call(ctx, b.session, "Emulation.setDeviceMetricsOverride", viewport, nil)
}

// waitCharts waits until every chart reports its drawing finished
// (animations included), or gives up after a while, and returns the charts'
// state.
func (b *browser) waitCharts(ctx context.Context) ([]ChartStatus, error) {
	deadline := time.Now().Add(10 * time.Second)
	for {
		charts, err := b.chartStatus(ctx)
		if err != nil {
			return nil, err
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

// evaluate runs a JavaScript expression in the page and decodes its value
// (returned by value) into out.
func (b *browser) evaluate(ctx context.Context, expr string, out any) error {
	var r struct {
		Result struct {
			Value json.RawMessage `json:"value"`
		} `json:"result"`
		ExceptionDetails *struct {
			Text      string `json:"text"`
			Exception struct {
				Description string `json:"description"`
			} `json:"exception"`
		} `json:"exceptionDetails"`
	}
	params := map[string]any{"expression": expr, "returnByValue": true, "awaitPromise": true}
	if err := b.conn.call(ctx, b.session, "Runtime.evaluate", params, &r); err != nil {
		return err
	}
	if e := r.ExceptionDetails; e != nil {
		return fmt.Errorf("evaluate in the page: %s %s", e.Text, e.Exception.Description)
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(r.Result.Value, out); err != nil {
		return fmt.Errorf("evaluate in the page: decode %s: %w", r.Result.Value, err)
	}
	return nil
}

func (b *browser) chartStatus(ctx context.Context) ([]ChartStatus, error) {
	var js string
	if err := b.evaluate(ctx, chartStatusJS, &js); err != nil {
		return nil, fmt.Errorf("read the charts' state: %w", err)
	}
	var out []ChartStatus
	if err := json.Unmarshal([]byte(js), &out); err != nil {
		return nil, fmt.Errorf("read the charts' state: %w", err)
	}
	return out, nil
}

// screenshot grows the viewport to the page's height (so nothing is cut
// and the charts keep their width) and saves a PNG of it.
func (b *browser) screenshot(ctx context.Context, pngPath string) error {
	c, s := b.conn, b.session
	var m struct {
		CSSContentSize struct {
			Height float64 `json:"height"`
		} `json:"cssContentSize"`
	}
	if err := c.call(ctx, s, "Page.getLayoutMetrics", nil, &m); err != nil {
		return err
	}
	h := min(max(int(m.CSSContentSize.Height+0.5), browserHeight), maxScreenshotPix)
	if err := b.setViewport(ctx, browserWidth, h); err != nil {
		return err
	}
	var shot struct {
		Data string `json:"data"`
	}
	if err := c.call(ctx, s, "Page.captureScreenshot", map[string]any{"format": "png", "captureBeyondViewport": true}, &shot); err != nil {
		return err
	}
	png, err := base64.StdEncoding.DecodeString(shot.Data)
	if err != nil {
		return fmt.Errorf("decode screenshot: %w", err)
	}
	if err := os.WriteFile(pngPath, png, 0o644); err != nil {
		return fmt.Errorf("save screenshot: %w", err)
	}
	return nil
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
