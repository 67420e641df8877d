package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dbrig/dbrig/internal/engine/postgres/pgtest"
	"github.com/dbrig/dbrig/internal/report/reporttest"
	"github.com/dbrig/dbrig/internal/study"
)

// dashboardURL reads dbrig's stderr until it names the dashboard's URL,
// then keeps draining it into the returned log.
func dashboardURL(t *testing.T, lines <-chan string) (string, func() string) {
	t.Helper()
	var log []string
	url := ""
	for line := range lines {
		log = append(log, line)
		if u, ok := strings.CutPrefix(line, "dbrig: live dashboard at "); ok {
			url = u
			break
		}
	}
	if url == "" {
		t.Fatalf("dbrig never printed the dashboard's URL:\n%s", strings.Join(log, "\n"))
	}
	done := make(chan struct{})
	go func() {
		for line := range lines {
			log = append(log, line)
		}
		close(done)
	}()
	return url, func() string { <-done; return strings.Join(log, "\n") }
}

// browsed is what a browser saw of the dashboard.
type browsed struct {
	check   reporttest.BrowserCheck
	err     error
	skipped string
}

// browse opens the dashboard in headless Chromium while the run goes and
// waits for its five charts and the link to the report at the end.
func browse(ctx context.Context, url, dir string) browsed {
	if _, err := reporttest.FindChromium(); err != nil && os.Getenv("CI") == "" {
		return browsed{skipped: err.Error()}
	}
	const ready = `document.querySelectorAll("[data-chart]").length === 5 && document.querySelectorAll("#points tbody tr").length === 1 && document.getElementById("report") !== null`
	check, err := reporttest.CheckPageInBrowser(ctx, url, ready, 3*time.Minute, filepath.Join(dir, "dashboard.png"))
	return browsed{check: check, err: err}
}

func checkBrowsed(t *testing.T, b browsed) {
	t.Helper()
	switch {
	case b.skipped != "":
		t.Logf("skipped the browser check: %s", b.skipped)
	case b.err != nil:
		t.Errorf("the dashboard in Chromium: %v", b.err)
	default:
		if problems := b.check.Problems(); len(problems) > 0 || b.check.Rendered != 5 {
			t.Errorf("the dashboard in Chromium: %d charts drawn, want 5; %s", b.check.Rendered, strings.Join(problems, "; "))
		}
	}
}

// readFeed reads the dashboard's event stream until the run's end.
func readFeed(t *testing.T, ctx context.Context, url string) []study.Event {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url+"events", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var events []study.Event
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var e study.Event
		if err := json.Unmarshal([]byte(data), &e); err != nil {
			t.Fatalf("event %s: %v", data, err)
		}
		events = append(events, e)
		if e.Type == study.EventEnd {
			break
		}
	}
	return events
}

// TestDashboardLoadOLTP watches `dbrig load oltp --dashboard 127.0.0.1:0`
// over HTTP as a page would: the stream shows the load's seconds, the
// link's, the finished point with its model and the end with the report,
// which the server serves while dbrig lingers; a signal then ends dbrig
// and nothing listens any more.
func TestDashboardLoadOLTP(t *testing.T) {
	t.Parallel()
	pgtest.Binaries(t)
	base := pgtest.BaseDir(t)
	dir := filepath.Join(t.TempDir(), "load")
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd, _, lines := startDbrig(t, base, "load", "oltp", "--users", "2", "--duration", "3s", "--warm-up", "1s", "--scale", "0.01",
		"--link", "lan-1g", "--dashboard", "127.0.0.1:0", "--dashboard-linger", "5m", "--out", dir)
	url, stderr := dashboardURL(t, lines)
	if !strings.HasPrefix(url, "http://127.0.0.1:") {
		t.Errorf("URL %s, want one on 127.0.0.1", url)
	}
	browsed := make(chan browsed, 1)
	go func() { browsed <- browse(ctx, url, t.TempDir()) }()
	events := readFeed(t, ctx, url)
	counts := map[study.EventType]int{}
	var point *study.PointDone
	var end study.Event
	for _, e := range events {
		counts[e.Type]++
		switch e.Type {
		case study.EventSecond:
			if e.Second != nil && e.Second.Phase == "measured" && e.Second.TPS > 0 && e.Second.P99Ms > 0 {
				counts["measured second with transactions"]++
			}
		case study.EventLink:
			if len(e.Links) != 1 || e.Links[0].Name == "" {
				t.Errorf("link second = %+v", e.Links)
			}
		case study.EventPoint:
			point = e.Point
		case study.EventEnd:
			end = e
		}
	}
	if counts[study.EventStart] != 1 || counts[study.EventSecond] < 3 || counts["measured second with transactions"] < 1 ||
		counts[study.EventLink] < 1 || counts[study.EventError] != 0 {
		t.Errorf("events by type = %v, want a start, the load's seconds, the link's and no error", counts)
	}
	if point == nil || point.Status != "measured" || len(point.Figures) == 0 {
		t.Fatalf("finished point = %+v, want a measured one with its figures", point)
	}
	if end.Report == "" {
		t.Fatalf("the end names no report: %+v", end)
	}
	resp, err := http.Get(url + "run/" + filepath.Base(end.Report))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "<html") {
		t.Errorf("the report through the dashboard: %d, %d bytes", resp.StatusCode, len(body))
	}
	checkBrowsed(t, <-browsed)
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	err = cmd.Wait()
	log := stderr()
	if code := exitCode(err); code != 0 && code != 130 {
		t.Errorf("exit %d after the linger was cut short:\n%s", code, log)
	}
	if _, err := http.Get(url); err == nil {
		t.Errorf("the dashboard still answers after dbrig exited")
	}
	pgtest.WaitNoServers(t, base, 10*time.Second)
	assertNoInstanceDirs(t, base)
}

// TestDashboardFlagUsage: a bad --dashboard exits 2 naming the flag before
// anything starts, and a host beyond loopback is served with a warning.
func TestDashboardFlagUsage(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"load", "oltp", "--dashboard", "http://x"},
		{"load", "tpch", "--dashboard", "99999"},
		{"run", "rbar-latency", "--dashboard", "127.0.0.1:x"},
		{"run", "rbar-latency", "--dashboard-linger", "1m"},
		{"load", "oltp", "--dashboard", "0", "--predict"},
	} {
		code, out := runIn(t, nil, args...)
		if code != 2 || !strings.Contains(out, "--dashboard") {
			t.Errorf("dbrig %s: exit %d, want 2 naming the flag:\n%s", strings.Join(args, " "), code, out)
		}
	}
	for _, v := range []string{"0", ":0", "localhost:0", "[::1]:0"} {
		f := dashboardFlags{addr: v}
		addr, exposed, err := f.listenAddr()
		if err != nil || exposed || !strings.HasSuffix(addr, ":0") {
			t.Errorf("--dashboard %s: %s exposed=%v %v, want loopback", v, addr, exposed, err)
		}
	}
	if addr, exposed, err := (&dashboardFlags{addr: "0.0.0.0:8080"}).listenAddr(); err != nil || !exposed || addr != "0.0.0.0:8080" {
		t.Errorf("--dashboard 0.0.0.0:8080: %s exposed=%v %v, want exposed", addr, exposed, err)
	}
}

// TestDashboardShowsNoPassword runs a study on a target whose password is
// on the command line and reads everything the dashboard serves: the
// page, the stream and the run's files through it; the password is in none.
func TestDashboardShowsNoPassword(t *testing.T) {
	t.Parallel()
	server := pgtest.Start(t, "dash-target", nil)
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()
	const pw = "Dash9TargetPw"
	if err := server.Exec(ctx, "postgres", "CREATE ROLE app LOGIN SUPERUSER PASSWORD '"+pw+"'"); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "on-yours.toml")
	spec := strings.Replace(strings.Replace(targetSpec, `engine = "mariadb"`, `engine = "postgres"`, 1), `settings = { sort_buffer_size = "1M" }`, "", 1)
	if err := os.WriteFile(file, []byte(strings.Replace(spec, `["unix", "lan-1g"]`, `["lan-1g"]`, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	uri := "postgres://app:" + pw + "@127.0.0.1:" + strconv.Itoa(server.Port()) + "/postgres"
	base := pgtest.BaseDir(t)
	dir := filepath.Join(t.TempDir(), "run")
	cmd, _, lines := startDbrig(t, base, "run", file, "--target", "db="+uri, "--dashboard", "0", "--dashboard-linger", "5m", "--out", dir)
	url, stderr := dashboardURL(t, lines)
	var seen strings.Builder
	var end study.Event
	for _, e := range readFeed(t, ctx, url) {
		b, _ := json.Marshal(e)
		seen.Write(b)
		if e.Type == study.EventEnd {
			end = e
		}
	}
	if end.Report == "" {
		t.Fatalf("the run ended without a report:\n%s", seen.String())
	}
	for _, path := range []string{"", "dashboard.js", "run/report.html", "run/report.md", "run/run.json", "run/environment.json", "run/results.jsonl"} {
		resp, err := http.Get(url + path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("%s: %d", path, resp.StatusCode)
		}
		seen.Write(b)
	}
	if !strings.Contains(seen.String(), "app@127.0.0.1") && !strings.Contains(seen.String(), "app:xxxxx@127.0.0.1") {
		t.Errorf("the run's files never name the target: the check reads nothing")
	}
	if strings.Contains(seen.String(), pw) {
		t.Errorf("the password shows on the dashboard")
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if code := exitCode(cmd.Wait()); code != 0 && code != 130 {
		t.Errorf("exit %d:\n%s", code, stderr())
	}
	if strings.Contains(stderr(), pw) {
		t.Errorf("the password shows on stderr")
	}
	pgtest.WaitNoServers(t, base, 10*time.Second)
}
