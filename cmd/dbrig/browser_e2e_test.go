package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dbrig/dbrig/internal/report/reporttest"
)

// checkInBrowser opens a page dbrig wrote in headless Chromium and fails
// the test on each problem reporttest's check finds: console errors,
// requests beyond the file, charts not drawn, y axes with too few ticks,
// series laid flat by another unit, legends that misname their series,
// clipped labels, elements wider than the window. A screenshot is saved
// beside the page. Without Chromium the test skips here, its other checks
// done, unless CI is set.
func checkInBrowser(t *testing.T, htmlPath string) {
	t.Helper()
	if _, err := reporttest.FindChromium(); err != nil && os.Getenv("CI") == "" {
		t.Skipf("skipped the browser check: %v", err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute) // a bound a hang reaches, not a busy machine
	defer cancel()
	png := strings.TrimSuffix(htmlPath, filepath.Ext(htmlPath)) + ".png"
	check, err := reporttest.CheckInBrowser(ctx, htmlPath, png)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range check.Problems() {
		t.Errorf("%s in Chromium: %s", filepath.Base(htmlPath), p)
	}
	if st, err := os.Stat(png); err != nil || st.Size() == 0 {
		t.Errorf("no screenshot beside the page: %v", err)
	}
}
