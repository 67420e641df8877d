package replication

import "time"

// tellEvery tells tell what sofar returns every interval, each time more
// has moved (by moved) than at the last telling: the work after the bytes'
// end (a restore, the subscriber's indexes) may run long and is not news.
// Its goroutine runs until stop, which waits for it; with no tell or no
// interval nothing runs.
func tellEvery[T any](every time.Duration, sofar func() T, moved func(T) int64, tell func(T)) (stop func()) {
	if tell == nil || every <= 0 {
		return func() {}
	}
	quit, done := make(chan struct{}), make(chan struct{})
	go func() { // stop ends it and waits for it
		defer close(done)
		t := time.NewTicker(every)
		defer t.Stop()
		var told int64
		for {
			select {
			case <-quit:
				return
			case <-t.C:
				if p := sofar(); moved(p) > told {
					told = moved(p)
					tell(p)
				}
			}
		}
	}()
	return func() {
		close(quit)
		<-done
	}
}
