package link

import (
	"context"
	"testing"
	"time"

	"github.com/dbrig/dbrig/internal/spareproc"
)

// A listening link holds a spare P for as long as it lives, so that a load
// in the same process keeps one for the link's relays. Not parallel: no
// other test's link is alive while a sequential test runs.
func TestAListeningLinkHoldsASparePUntilItCloses(t *testing.T) {
	if spareproc.Held() {
		t.Skip("something else in the process holds a spare P")
	}
	for _, tc := range []struct {
		name  string
		close func(p *Proxy, cancel context.CancelFunc)
	}{
		{"closed", func(p *Proxy, _ context.CancelFunc) { p.Close() }},
		{"its context done", func(_ *Proxy, cancel context.CancelFunc) {
			cancel()
			for deadline := time.Now().Add(10 * time.Second); spareproc.Held() && time.Now().Before(deadline); {
				time.Sleep(time.Millisecond)
			}
		}},
	} {
		ctx, cancel := context.WithCancel(context.Background())
		p, err := Listen(ctx, "127.0.0.1:0", "127.0.0.1:1", Config{})
		if err != nil {
			cancel()
			t.Fatal(err)
		}
		if !spareproc.Held() {
			t.Errorf("%s: a listening link holds no spare P", tc.name)
		}
		tc.close(p, cancel)
		held := spareproc.Held()
		p.Close()
		cancel()
		if held {
			t.Errorf("%s: the link's spare P is still held after it closed", tc.name)
		}
	}
}
