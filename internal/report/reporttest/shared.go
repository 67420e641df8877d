package reporttest

import (
	"context"
	"fmt"
	"sync"

	"github.com/chromedp/chromedp"
)

// Starting Chromium costs more CPU than most checks (a second or more of
// it on a busy machine), and a test package may check a dozen pages: so a
// package can share one Chromium between its checks, each in a tab of its
// own browser context (no cookies or storage shared), started on first use
// and stopped when the package's tests are done.

// sharedChromium is the Chromium every check of this process uses once
// [ShareBrowser] was called; proc is nil until the first check starts it.
var sharedChromium struct {
	mu   sync.Mutex
	on   bool
	proc *browser
}

// ShareBrowser makes every later [CheckInBrowser], [CheckPageInBrowser]
// and [Screenshot] of this process open its page in a new tab of one
// Chromium, started by the first of them, rather than start a Chromium
// each. A test package's TestMain calls it before running the tests and
// calls stop after them: stop kills that Chromium and everything it
// started, and removes its profile; checks after it start their own.
func ShareBrowser() (stop func()) {
	sharedChromium.mu.Lock()
	sharedChromium.on = true
	sharedChromium.mu.Unlock()
	return func() {
		sharedChromium.mu.Lock()
		defer sharedChromium.mu.Unlock()
		sharedChromium.on = false
		if sharedChromium.proc != nil {
			sharedChromium.proc.stop()
			sharedChromium.proc = nil
		}
	}
}

// newPage returns a browser with one tab for one check: a tab of the
// shared Chromium when [ShareBrowser] is on, else a Chromium of its own
// that ctx bounds. Its stop closes what it opened.
func newPage(ctx context.Context, bin string) (*browser, error) {
	proc, err := sharedProcess(bin)
	switch {
	case err != nil:
		return nil, err
	case proc == nil:
		return startChromium(ctx, bin)
	}
	return openTab(ctx, proc)
}

// sharedProcess returns the shared Chromium, starting it when none runs
// (or the last died), or nil when checks do not share one. It outlives the check that starts
// it, so no check's context bounds it: ShareBrowser's stop ends it.
func sharedProcess(bin string) (*browser, error) {
	sharedChromium.mu.Lock()
	defer sharedChromium.mu.Unlock()
	if !sharedChromium.on {
		return nil, nil
	}
	// chromedp ends the context of a Chromium that died (a crash, the OOM
	// killer): one dead Chromium must not fail every later check.
	if proc := sharedChromium.proc; proc != nil && proc.tab.Err() != nil {
		proc.stop()
		sharedChromium.proc = nil
	}
	if sharedChromium.proc == nil {
		proc, err := startChromium(context.Background(), bin)
		if err != nil {
			return nil, err
		}
		sharedChromium.proc = proc
	}
	return sharedChromium.proc, nil
}

// openTab opens a tab in a new browser context of proc's Chromium. The tab
// closes (and its browser context goes) on its stop or when ctx ends; the
// Chromium runs on.
func openTab(ctx context.Context, proc *browser) (*browser, error) {
	b := &browser{output: proc.output}
	tab, cancelTab := chromedp.NewContext(proc.tab, chromedp.WithNewBrowserContext(), chromedp.WithListener(b.event))
	stopWithCtx := context.AfterFunc(ctx, cancelTab)
	b.tab = tab
	b.cancel = func() { stopWithCtx(); cancelTab() }
	// As in startChromium, the tab lives as long as the context its first
	// command gets, so that command runs on the tab's own context.
	if err := resize(tab, browserWidth, browserHeight); err != nil {
		b.stop()
		return nil, fmt.Errorf("open a tab in chromium: %w%s", err, proc.outputTail())
	}
	return b, nil
}
