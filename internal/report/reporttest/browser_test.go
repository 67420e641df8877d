package reporttest

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dbrig/dbrig/internal/report"
)

// needChromium returns Chromium's path; without one the test is skipped
// locally and fails in CI (CI set), where the browser check must run.
func needChromium(t *testing.T) {
	t.Helper()
	if _, err := FindChromium(); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("CI needs Chromium for the browser check (apt-get install chromium): %v", err)
		}
		t.Skipf("skipping the browser check: %v", err)
	}
}

// TestReportInBrowser opens the sample report in headless Chromium: it must
// load offline without console errors and draw every chart. The screenshot
// is saved next to the report (report.png); set DBRIG_REPORT_DIR to keep
// both for a look. The same page then shows the charts following the
// window's width and a point's tooltip its label (checkResizeAndTooltip):
// one load of the page, in a tab of the package's Chromium, where a test
// of their own started a Chromium and loaded the page again (the package
// took 27.4 s of CPU with it, 24.1 without, mean of three runs each).
func TestReportInBrowser(t *testing.T) {
	needChromium(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()

	dir := t.TempDir()
	if keep := os.Getenv("DBRIG_REPORT_DIR"); keep != "" {
		dir = keep
	}
	d := SampleDoc()
	htmlPath, _, err := report.WriteFiles(dir, d)
	if err != nil {
		t.Fatal(err)
	}
	abs, err := filepath.Abs(htmlPath)
	if err != nil {
		t.Fatal(err)
	}
	bin, _ := FindChromium()
	b, err := newPage(ctx, bin)
	if err != nil {
		t.Fatal(err)
	}
	defer b.stop()
	png := filepath.Join(dir, "report.png")
	res, err := b.check(ctx, abs, png)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range res.Problems() {
		t.Error(p)
	}
	if len(res.Charts) != len(d.Charts) || res.Rendered != len(d.Charts) {
		t.Errorf("%d of %d chart containers drawn, want all %d: %+v", res.Rendered, len(res.Charts), len(d.Charts), res.Charts)
	}
	fi, err := os.Stat(png)
	if err != nil || fi.Size() < 10_000 {
		t.Errorf("screenshot %s missing or too small (%v, %v)", png, fi, err)
	}
	t.Logf("screenshot: %s; charts: %+v", png, res.Charts)
	checkResizeAndTooltip(t, ctx, b)
}

// TestCheckInBrowserSeesErrors makes sure the check is not blind: a page
// with a script error, a request to the network and a chart that never
// draws must each be reported.
func TestCheckInBrowserSeesErrors(t *testing.T) {
	needChromium(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	dir := t.TempDir()
	page := filepath.Join(dir, "bad.html")
	const bad = `<!DOCTYPE html><html><head><title>bad</title></head><body>
<div data-chart id="never" style="width:400px;height:300px"></div>
<img src="http://127.0.0.1:9/x.png">
<script>console.error("boom"); undefinedFunction();</script>
</body></html>`
	if err := os.WriteFile(page, []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := CheckInBrowser(ctx, page, filepath.Join(dir, "bad.png"))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.ConsoleErrors) < 2 {
		t.Errorf("console errors = %q, want the console.error and the exception", res.ConsoleErrors)
	}
	if len(res.ExternalRequests) == 0 {
		t.Error("the request to http://127.0.0.1:9 was not seen")
	}
	if len(res.Charts) != 1 || res.Rendered != 0 {
		t.Errorf("charts = %+v, rendered = %d; want one container, not drawn", res.Charts, res.Rendered)
	}
}

func TestCheckInBrowserMissingFile(t *testing.T) {
	_, err := CheckInBrowser(context.Background(), filepath.Join(t.TempDir(), "none.html"), "x.png")
	if err == nil || errors.Is(err, ErrNoChromium) {
		t.Errorf("err = %v, want a missing-file error", err)
	}
}

// checkResizeAndTooltip drives the sample report, open and drawn in b,
// further than the check does: the charts follow the window's width, and a
// point's tooltip shows its label.
func checkResizeAndTooltip(t *testing.T, ctx context.Context, b *browser) {
	t.Helper()
	// The screenshot grew the window to the page's height: back to the
	// window a reader starts with.
	if err := b.setViewport(ctx, browserWidth, browserHeight); err != nil {
		t.Fatal(err)
	}
	const widthsJS = `Array.from(document.querySelectorAll("[data-chart] canvas")).map(c => c.getBoundingClientRect().width)`
	var wide, narrow []float64
	if err := b.evaluate(ctx, widthsJS, &wide); err != nil {
		t.Fatal(err)
	}
	if err := b.setViewport(ctx, 700, 900); err != nil {
		t.Fatal(err)
	}
	for range 50 {
		if err := b.evaluate(ctx, widthsJS, &narrow); err != nil {
			t.Fatal(err)
		}
		if len(narrow) > 0 && narrow[0] < wide[0] {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if len(wide) != 3 || len(narrow) != 3 {
		t.Fatalf("canvas widths %v then %v, want 3 charts", wide, narrow)
	}
	for i := range wide {
		if wide[i] < 900 || narrow[i] > 700 || narrow[i] < 500 {
			t.Errorf("chart %d: canvas %.0f px wide in a 1280 px window, %.0f px in a 700 px one", i, wide[i], narrow[i])
		}
	}

	const tipJS = `new Promise(done => {
  const c = window.dbrigCharts[0];
  c.chart.dispatchAction({type: "showTip", seriesIndex: 0, dataIndex: 1});
  setTimeout(() => done(document.getElementById(c.id).innerText), 100);
})`
	var tip string
	if err := b.evaluate(ctx, tipJS, &tip); err != nil {
		t.Fatal(err)
	}
	t.Logf("tooltip: %q", tip)
	for _, want := range []string{"runs", "rtt 0.05 ms, run 2"} {
		if !strings.Contains(tip, want) {
			t.Errorf("tooltip %q lacks %q", tip, want)
		}
	}
}

// TestBrowserStopKillsAll checks that stopping leaves no live Chromium
// process behind (in its process group, or any process naming its
// profile, as crashpad's handler does) and no profile directory.
func TestBrowserStopKillsAll(t *testing.T) {
	needChromium(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	bin, _ := FindChromium()
	b, err := startChromium(ctx, bin)
	if err != nil {
		t.Fatal(err)
	}
	pgid := b.pid
	if live := liveProcesses(t, pgid, b.profile); len(live) == 0 {
		t.Fatal("found no Chromium process while it runs: the check below would prove nothing")
	}
	b.stop()
	b.stop() // a second stop is harmless
	assertStopped(t, pgid, b.profile)
}

// assertStopped fails the test when a process of the stopped Chromium
// (process group pgid, or naming its profile) lives on, or its profile
// is left. Killed processes may linger a moment as zombies until reaped;
// they must not stay alive.
func assertStopped(t *testing.T, pgid int, profile string) {
	t.Helper()
	var live []string
	for range 50 {
		if live = liveProcesses(t, pgid, profile); len(live) == 0 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if len(live) > 0 {
		t.Errorf("still alive after stop: %q", live)
	}
	if _, err := os.Stat(profile); !os.IsNotExist(err) {
		t.Errorf("profile %s still there after stop (%v)", profile, err)
	}
}

// liveProcesses lists the processes, zombies aside, in process group pgid
// or with profile on their command line.
func liveProcesses(t *testing.T, pgid int, profile string) []string {
	t.Helper()
	dirs, err := filepath.Glob("/proc/[0-9]*")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, d := range dirs {
		stat, err := os.ReadFile(filepath.Join(d, "stat"))
		if err != nil {
			continue // gone meanwhile
		}
		// pid (comm) state ppid pgrp ...: comm may hold spaces, so split
		// after its closing parenthesis.
		rest := string(stat[strings.LastIndexByte(string(stat), ')')+1:])
		f := strings.Fields(rest)
		if len(f) < 3 || f[0] == "Z" || f[0] == "X" {
			continue
		}
		cmd, _ := os.ReadFile(filepath.Join(d, "cmdline"))
		if f[2] == strconv.Itoa(pgid) || strings.Contains(string(cmd), profile) {
			out = append(out, filepath.Base(d)+" "+strings.ReplaceAll(string(cmd), "\x00", " "))
		}
	}
	return out
}
