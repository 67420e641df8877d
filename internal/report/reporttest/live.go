package reporttest

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"time"

	"github.com/chromedp/chromedp"
)

// CheckPageInBrowser opens a page a server serves (dbrig's live dashboard)
// in headless Chromium, waits until the JavaScript expression ready is
// true (or gives up after timeout), then checks it as [CheckInBrowser]
// checks a report: its charts, console errors and requests. A request to
// the page's own origin is the page's; any other is external.
func CheckPageInBrowser(ctx context.Context, pageURL, ready string, timeout time.Duration, pngPath string) (BrowserCheck, error) {
	var res BrowserCheck
	page, err := url.Parse(pageURL)
	if err != nil {
		return res, fmt.Errorf("check %s in a browser: %w", pageURL, err)
	}
	bin, err := FindChromium()
	if err != nil {
		return res, err
	}
	b, err := newPage(ctx, bin)
	if err != nil {
		return res, fmt.Errorf("check %s in a browser: %w", pageURL, err)
	}
	defer b.stop()
	if err := b.navigate(ctx, pageURL); err != nil {
		return res, fmt.Errorf("check %s in a browser: %w%s", pageURL, err, b.outputTail())
	}
	if err := b.waitFor(ctx, ready, timeout); err != nil {
		return res, fmt.Errorf("check %s in a browser: %w", pageURL, err)
	}
	res, err = b.checkOpen(ctx, pngPath)
	if err != nil {
		return res, fmt.Errorf("check %s in a browser: %w%s", pageURL, err, b.outputTail())
	}
	res.ExternalRequests = slices.DeleteFunc(res.ExternalRequests, func(s string) bool {
		u, err := url.Parse(s)
		return err == nil && u.Scheme == page.Scheme && u.Host == page.Host
	})
	return res, nil
}

// navigate opens a page by its URL in the tab and waits for its load event.
func (b *browser) navigate(ctx context.Context, pageURL string) error {
	tab, done := b.inTab(ctx)
	defer done()
	return chromedp.Do(tab, chromedp.Navigate(pageURL))
}

// waitFor polls the expression until it is true or timeout passes.
func (b *browser) waitFor(ctx context.Context, expr string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		var ok bool
		if err := b.evaluate(ctx, "!!("+expr+")", &ok); err != nil {
			return err
		}
		if ok {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the page was not ready (%s) after %s", expr, timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}
