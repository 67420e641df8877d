package engine_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/dbrig/dbrig/internal/engine"
)

// TestOncePerKey: concurrent callers of a key share one making, a failure
// is not kept, and a caller whose context ends stops waiting.
func TestOncePerKey(t *testing.T) {
	t.Parallel()
	var o engine.OncePerKey[string, int]
	var made atomic.Int32
	build := func(context.Context) (int, error) { return int(made.Add(1)), nil }
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() { // collected by wg.Wait below
			defer wg.Done()
			if v, err := o.Get(t.Context(), "a", build); err != nil || v != 1 {
				t.Errorf("Get = %d, %v; want 1 (one making)", v, err)
			}
		}()
	}
	wg.Wait()
	failed := errors.New("installer failed")
	if _, err := o.Get(t.Context(), "b", func(context.Context) (int, error) { return 0, failed }); !errors.Is(err, failed) {
		t.Errorf("Get = %v, want the making's error", err)
	}
	if v, err := o.Get(t.Context(), "b", build); err != nil || v != 2 {
		t.Errorf("Get after a failure = %d, %v; want a new making", v, err)
	}
	release := make(chan struct{})
	started := make(chan struct{})
	go func() { // ends when release is closed
		_, _ = o.Get(context.Background(), "c", func(context.Context) (int, error) {
			close(started)
			<-release
			return 3, nil
		})
	}()
	<-started
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := o.Get(ctx, "c", build); !errors.Is(err, context.Canceled) {
		t.Errorf("Get with an ended context = %v, want it cancelled", err)
	}
	close(release)
	if v, err := o.Get(t.Context(), "c", build); err != nil || v != 3 {
		t.Errorf("Get = %d, %v; want the first making's 3", v, err)
	}
	seen := 0
	o.Each(func(string, int) { seen++ })
	if seen != 3 {
		t.Errorf("Each saw %d values, want 3", seen)
	}
}
