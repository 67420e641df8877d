// Package reporttest checks written reports the way a reader sees them: in
// headless Chromium (driven by chromedp over a pipe, listening on no port),
// it opens an HTML report or a live dashboard page, fails on a chart whose
// axis has too few ticks or shares a unit with a series it flattens, a
// legend that does not name its series' metric, an element wider than the
// page or a clipped label, and can save a screenshot (CheckInBrowser,
// CheckPageInBrowser, Screenshot). A test package that checks many pages
// shares one Chromium between them (ShareBrowser in its TestMain). Tests
// only: dbrig itself never starts a browser. SampleDoc is a report
// document with every kind of section, for tests of the renderer.
package reporttest
