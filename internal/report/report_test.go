package report_test

import (
	"bytes"
	"flag"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dbrig/dbrig/internal/report"
	"github.com/dbrig/dbrig/internal/report/reporttest"

	"golang.org/x/net/html"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read golden file (run go test -update to create it): %v", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file (run go test -update if the change is intended)\n--- got ---\n%s", path, got)
	}
}

func TestGolden(t *testing.T) {
	tests := []struct {
		name  string
		write func(*bytes.Buffer, *report.Doc) error
	}{
		{"report.md.golden", func(b *bytes.Buffer, d *report.Doc) error { return report.WriteMarkdown(b, d) }},
		{"summary.golden", func(b *bytes.Buffer, d *report.Doc) error { return report.WriteSummary(b, d, false) }},
		{"summary-color.golden", func(b *bytes.Buffer, d *report.Doc) error { return report.WriteSummary(b, d, true) }},
		{"empty.md.golden", func(b *bytes.Buffer, _ *report.Doc) error {
			return report.WriteMarkdown(b, &report.Doc{Title: "Empty"})
		}},
		{"empty-summary.golden", func(b *bytes.Buffer, _ *report.Doc) error {
			return report.WriteSummary(b, &report.Doc{Title: "Empty"}, false)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := tt.write(&b, reporttest.SampleDoc()); err != nil {
				t.Fatal(err)
			}
			golden(t, tt.name, b.Bytes())
		})
	}
}

func TestSummaryFitsTerminal(t *testing.T) {
	var b bytes.Buffer
	if err := report.WriteSummary(&b, reporttest.SampleDoc(), false); err != nil {
		t.Fatal(err)
	}
	for i, line := range strings.Split(b.String(), "\n") {
		if n := len([]rune(line)); n > 100 {
			t.Errorf("line %d is %d columns wide (max 100): %q", i+1, n, line)
		}
		if strings.Contains(line, "\x1b[") {
			t.Errorf("line %d has a colour escape with colour off: %q", i+1, line)
		}
	}
}

func renderHTML(t *testing.T, d *report.Doc) string {
	t.Helper()
	var b bytes.Buffer
	if err := report.WriteHTML(&b, d); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// walk calls f for every element of the parsed page.
func walk(n *html.Node, f func(*html.Node)) {
	if n.Type == html.ElementNode {
		f(n)
	}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		walk(c, f)
	}
}

func attr(n *html.Node, key string) (string, bool) {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val, true
		}
	}
	return "", false
}

func TestHTML(t *testing.T) {
	d := reporttest.SampleDoc()
	page := renderHTML(t, d)
	root, err := html.Parse(strings.NewReader(page))
	if err != nil {
		t.Fatalf("page does not parse as HTML: %v", err)
	}

	var scripts, containers, injected int
	var echartsInlined bool
	ids := map[string]bool{}
	walk(root, func(n *html.Node) {
		if id, ok := attr(n, "id"); ok {
			if ids[id] {
				t.Errorf("duplicate element id %q", id)
			}
			ids[id] = true
		}
		switch n.Data {
		case "script":
			scripts++
			if src, ok := attr(n, "src"); ok {
				t.Errorf("script loads %q: a report must inline its scripts", src)
			}
			if n.FirstChild != nil && strings.Contains(n.FirstChild.Data, "Licensed to the Apache Software Foundation") &&
				strings.Contains(n.FirstChild.Data, "getInstanceByDom") {
				echartsInlined = true
			}
			if n.FirstChild != nil && strings.Contains(n.FirstChild.Data, "alert(1)") {
				injected++
			}
		case "link", "img", "iframe", "source", "embed", "object":
			for _, k := range []string{"href", "src", "data"} {
				if v, ok := attr(n, k); ok && (strings.HasPrefix(v, "http:") || strings.HasPrefix(v, "https:") || strings.HasPrefix(v, "//")) {
					t.Errorf("<%s %s=%q> reaches the network", n.Data, k, v)
				}
			}
		case "div":
			if _, ok := attr(n, "data-chart"); ok {
				containers++
			}
		}
	})
	if !echartsInlined {
		t.Error("the echarts library is not inlined")
	}
	if containers != len(d.Charts) {
		t.Errorf("%d chart containers, want one per chart (%d)", containers, len(d.Charts))
	}
	for _, c := range d.Charts {
		if !ids[c.ID] {
			t.Errorf("no element with the chart's id %q", c.ID)
		}
	}
	if injected > 0 {
		t.Error("a finding's <script> reached the page as a script")
	}
	for _, want := range []string{
		"&lt;script&gt;alert(1)&lt;/script&gt;", // the finding's text, escaped
		"Rubén Garrigós",
		`class="badge v-reproduced"`, `class="badge v-differs"`, `class="badge v-not-measured"`,
		"What this machine cannot show", "dbrig run rbar-latency --full --out runs/rbar",
		"2025-03-14 09:26:53 UTC", "<details class=\"points\">", // 48 points: starts collapsed
		"context deadline exceeded", "AMD EPYC 7B13",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	// Series names reach the page only inside JSON, with < escaped.
	if strings.Contains(page, "rows/s <b>") {
		t.Error("a series name reached the page unescaped")
	}
}

func TestHTMLEdgeCases(t *testing.T) {
	tests := []struct {
		name string
		doc  *report.Doc
		want []string
	}{
		{"empty", &report.Doc{}, []string{"No points were measured.", "None: no point failed."}},
		{"duplicate and empty chart ids", &report.Doc{Charts: []report.Chart{
			{ID: "a", Series: []report.Series{{Name: "s", Points: []report.XY{{X: 1, Y: 1}}}}},
			{ID: "a", Series: []report.Series{{Name: "s", Points: []report.XY{{X: 1, Y: 1}}}}},
			{Series: []report.Series{{Name: "s", Points: []report.XY{{X: 1, Y: 1}}}}},
		}}, []string{`id="a"`, `id="chart-2"`, `id="chart-3"`}},
		{"undrawable points", &report.Doc{Charts: []report.Chart{{ID: "log", YLog: true, Series: []report.Series{
			{Name: "s", Points: []report.XY{{X: 1, Y: 0}, {X: 2, Y: math.NaN()}, {X: 3, Y: 3}}},
		}}}}, []string{"s: 2 point(s) not drawn"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			page := renderHTML(t, tt.doc)
			for _, w := range tt.want {
				if !strings.Contains(page, w) {
					t.Errorf("page lacks %q", w)
				}
			}
		})
	}
}

func TestWriteFiles(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	h, m, err := report.WriteFiles(dir, reporttest.SampleDoc())
	if err != nil {
		t.Fatal(err)
	}
	if h != filepath.Join(dir, report.HTMLFile) || m != filepath.Join(dir, report.MarkdownFile) {
		t.Errorf("paths = %s, %s", h, m)
	}
	// A second write replaces the files and leaves no temporary file behind.
	if _, _, err := report.WriteFiles(dir, reporttest.SampleDoc()); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if strings.Join(names, ",") != "report.html,report.md" {
		t.Errorf("dir holds %v, want only report.html and report.md", names)
	}
	var want bytes.Buffer
	if err := report.WriteMarkdown(&want, reporttest.SampleDoc()); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(m); !bytes.Equal(got, want.Bytes()) {
		t.Error("report.md differs from WriteMarkdown's output")
	}
}

// TestSummaryListsAFailureByItsFirstLine: a failure whose error carries a
// server log's last lines (printed when the point failed, and in the
// report) is listed by its first line only, not the log again.
func TestSummaryListsAFailureByItsFirstLine(t *testing.T) {
	d := reporttest.SampleDoc()
	d.Failures = []string{"net=unix #1: start mariadb instance \"db\": mariadbd exited during start-up (exit status 1); its log ends:\n" +
		"    2026-11-25 12:39:31 0 [Note] InnoDB: Completed initialization of buffer pool\n" +
		"    2026-11-25 12:39:31 0 [ERROR] Unknown/unsupported storage engine: NoSuchEngine\n",
		"net=lan-1g #1: context deadline exceeded"}
	var b bytes.Buffer
	if err := report.WriteSummary(&b, d, false); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"- net=unix #1: start mariadb instance \"db\": mariadbd exited during start-up (exit status 1); its log ends (the rest is in report.md)\n",
		"- net=lan-1g #1: context deadline exceeded\n",
	} {
		if !strings.Contains(strings.ReplaceAll(out, "\n    ", " "), want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "NoSuchEngine") || strings.Contains(out, "[Note]") {
		t.Errorf("the summary repeats the server log:\n%s", out)
	}
}
