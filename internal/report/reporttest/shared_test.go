package reporttest

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/dbrig/dbrig/internal/report"
)

// TestMain shares one Chromium between this package's checks, as
// cmd/dbrig's does, and stops it when they are done.
func TestMain(m *testing.M) {
	stopBrowser := ShareBrowser()
	code := m.Run()
	stopBrowser()
	os.Exit(code)
}

// TestTabsShareAChromium checks what sharing one Chromium must keep: two
// checks at once, each in its own tab, see only their own page's errors;
// closing a tab leaves the Chromium running for the next; stopping the
// Chromium leaves no process or profile behind.
func TestTabsShareAChromium(t *testing.T) {
	needChromium(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	bin, _ := FindChromium()
	proc, err := startChromium(ctx, bin)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(proc.stop)
	dir := t.TempDir()
	good, _, err := report.WriteFiles(dir, SampleDoc())
	if err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(dir, "bad.html")
	if err := os.WriteFile(bad, []byte(`<!DOCTYPE html><html><head><title>bad</title></head><body><script>console.error("boom")</script></body></html>`), 0o644); err != nil {
		t.Fatal(err)
	}

	pages := map[string]string{"good": good, "bad": bad}
	seen := map[string]BrowserCheck{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for name, page := range pages {
		wg.Go(func() {
			b, err := openTab(ctx, proc)
			if err != nil {
				t.Error(err)
				return
			}
			defer b.stop()
			res, err := b.check(ctx, page, filepath.Join(dir, name+".png"))
			if err != nil {
				t.Error(err)
			}
			mu.Lock()
			seen[name] = res
			mu.Unlock()
		})
	}
	wg.Wait()
	if p := seen["good"].Problems(); len(p) > 0 {
		t.Errorf("the good page, checked beside a bad one: %q", p)
	}
	if len(seen["bad"].ConsoleErrors) != 1 {
		t.Errorf("the bad page's console errors = %q, want its one", seen["bad"].ConsoleErrors)
	}

	if live := liveProcesses(t, proc.pid, proc.profile); len(live) == 0 {
		t.Error("closing the tabs stopped the Chromium they shared")
	}
	proc.stop()
	assertStopped(t, proc.pid, proc.profile)
}

// TestSharedChromiumRestartsAfterItDies: a shared Chromium that died (a
// crash, the OOM killer) must not fail every later check of the package:
// the next check starts another. Not parallel: it kills the package's
// shared Chromium, which no other test uses while it runs.
func TestSharedChromiumRestartsAfterItDies(t *testing.T) {
	needChromium(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	bin, _ := FindChromium()
	first, err := newPage(ctx, bin)
	if err != nil {
		t.Fatal(err)
	}
	first.stop()
	sharedChromium.mu.Lock()
	dead := sharedChromium.proc
	sharedChromium.mu.Unlock()
	if dead == nil {
		t.Fatal("no shared Chromium: TestMain did not share one, so this test proves nothing")
	}
	if err := syscall.Kill(-dead.pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	select {
	case <-dead.tab.Done():
	case <-ctx.Done():
		t.Fatal("chromedp did not notice its Chromium died")
	}

	page := filepath.Join(t.TempDir(), "page.html")
	if err := os.WriteFile(page, []byte(`<!DOCTYPE html><html><head><title>p</title></head><body>p</body></html>`), 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := CheckInBrowser(ctx, page, filepath.Join(filepath.Dir(page), "page.png"))
	if err != nil {
		t.Fatalf("the check after the shared Chromium died: %v", err)
	}
	if p := res.Problems(); len(p) > 0 {
		t.Errorf("problems: %q", p)
	}
	if _, err := os.Stat(dead.profile); !os.IsNotExist(err) {
		t.Errorf("the dead Chromium's profile %s is still there (%v)", dead.profile, err)
	}
}
