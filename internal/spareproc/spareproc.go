// Package spareproc records whether this process runs goroutines that must
// get a CPU within microseconds while every virtual user of a load waits in
// the kernel: an emulated link's relays and schedulers carry the users'
// round trips, so they cannot wait for a user to pass through the
// scheduler. The load runner keeps spare Ps for them (GOMAXPROCS above its
// users) only while one is held; a load alone in its process gives each
// user a P and no more, which saves the wake-up of an idle thread at every
// user's yield (internal/load's reserveProcs says what that costs).
//
// A component holds a spare from its start to its end; forgetting to hold
// one starves it for up to a user's yield interval, so whatever serves the
// users' conversations from inside the process holds one.
package spareproc

import (
	"sync"
	"sync/atomic"
)

var holders atomic.Int64

// Hold says that a component that must run promptly is running, until the
// returned release is called (any number of times; it counts once).
func Hold() (release func()) {
	holders.Add(1)
	return sync.OnceFunc(func() { holders.Add(-1) })
}

// Held says whether any component holds a spare now.
func Held() bool { return holders.Load() > 0 }
