package reporttest

import (
	"context"
	"os"
	"path/filepath"
	"sync"
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
	var live []string
	for range 50 {
		if live = liveProcesses(t, proc.pid, proc.profile); len(live) == 0 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if len(live) > 0 {
		t.Errorf("still alive after stop: %q", live)
	}
	if _, err := os.Stat(proc.profile); !os.IsNotExist(err) {
		t.Errorf("profile %s still there after stop (%v)", proc.profile, err)
	}
}
