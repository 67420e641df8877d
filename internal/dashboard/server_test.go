package dashboard

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dbrig/dbrig/internal/study"
)

func start(t *testing.T, feed *study.Feed, redact func(string) string) *Server {
	t.Helper()
	s, err := Start("127.0.0.1:0", feed, redact)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	})
	return s
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// readEvents reads SSE messages until it has n of them.
func readEvents(t *testing.T, ctx context.Context, url string, n int) []map[string]any {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type = %q", ct)
	}
	var out []map[string]any
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for len(out) < n && sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var e map[string]any
		if err := json.Unmarshal([]byte(data), &e); err != nil {
			t.Fatalf("event %q: %v", data, err)
		}
		out = append(out, e)
	}
	return out
}

func TestEventsStreamHistoryThenLiveRedacted(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	feed := study.NewFeed(0)
	const pw = `s3"cr\et`
	s := start(t, feed, func(x string) string { return strings.ReplaceAll(x, pw, "xxxxx") })
	feed.Publish(study.Event{Type: study.EventStart, Study: "load-oltp", Total: 2})
	feed.Publish(study.Event{Type: study.EventError, Error: "connect to postgres://app:" + pw + "@db/x: refused"})
	go func() {
		// The page has subscribed once it holds the history; the rest is live.
		time.Sleep(100 * time.Millisecond)
		feed.Publish(study.Event{Type: study.EventEnd, Report: "runs/x/report.html"})
	}()
	events := readEvents(t, ctx, s.URL()+"events", 3)
	if len(events) != 3 {
		t.Fatalf("got %d events, want 3", len(events))
	}
	for i, want := range []string{"start", "error", "end"} {
		if events[i]["type"] != want {
			t.Errorf("event %d is %v, want %s", i, events[i]["type"], want)
		}
	}
	if e := events[1]["error"].(string); strings.Contains(e, "cr") || !strings.Contains(e, "xxxxx") {
		t.Errorf("error = %q, want the password redacted", e)
	}
}

func TestPageAndScriptsAreServedFromItself(t *testing.T) {
	t.Parallel()
	s := start(t, study.NewFeed(0), nil)
	code, page := get(t, s.URL())
	if code != http.StatusOK || !strings.Contains(page, `src="echarts.min.js"`) || strings.Contains(page, "http") && strings.Contains(page, "://") {
		t.Errorf("page: %d, want the page with its scripts from its own server:\n%s", code, page)
	}
	for _, name := range []string{"echarts.min.js", "dashboard.js", "dashboard.css"} {
		if code, body := get(t, s.URL()+name); code != http.StatusOK || len(body) == 0 {
			t.Errorf("%s: %d, %d bytes", name, code, len(body))
		}
	}
}

func TestRunFilesOnlyOfTheRunDirectory(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	dir := filepath.Join(base, "run")
	if err := os.MkdirAll(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(path, text string) {
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(dir, "report.html"), "the report")
	write(filepath.Join(base, "secret.txt"), "not the run's")
	if err := os.Symlink(filepath.Join(base, "secret.txt"), filepath.Join(dir, "escape.txt")); err != nil {
		t.Fatal(err)
	}
	s := start(t, study.NewFeed(0), nil)
	if code, _ := get(t, s.URL()+"run/report.html"); code != http.StatusNotFound {
		t.Errorf("before the run has a directory: %d, want 404", code)
	}
	s.SetRunDir(dir)
	if code, body := get(t, s.URL()+"run/report.html"); code != http.StatusOK || body != "the report" {
		t.Errorf("report.html: %d %q", code, body)
	}
	for _, name := range []string{"escape.txt", "..%2Fsecret.txt", "sub", "missing.html"} {
		if code, body := get(t, s.URL()+"run/"+name); code == http.StatusOK || strings.Contains(body, "not the run's") {
			t.Errorf("run/%s: %d %q, want refused", name, code, body)
		}
	}
	req, _ := http.NewRequest(http.MethodPost, s.URL()+"run/report.html", strings.NewReader("x"))
	if resp, err := http.DefaultClient.Do(req); err != nil {
		t.Fatal(err)
	} else if resp.Body.Close(); resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST: %d, want 405", resp.StatusCode)
	}
}

// Close must end a stream a page holds open, not wait for the page.
func TestCloseEndsOpenStreams(t *testing.T) {
	t.Parallel()
	feed := study.NewFeed(0)
	s, err := Start("127.0.0.1:0", feed, nil)
	if err != nil {
		t.Fatal(err)
	}
	feed.Publish(study.Event{Type: study.EventStart})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.URL()+"events", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	first := make([]byte, 5)
	if _, err := io.ReadFull(resp.Body, first); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if _, err := io.ReadAll(resp.Body); err != nil {
		t.Errorf("the stream did not end cleanly: %v", err)
	}
	if _, err := http.Get(s.URL()); err == nil {
		t.Error("the server still answers after Close")
	}
}
