//go:build !linux

package load

import "context"

func newPreciseWaiter(r *Runner, stop context.Context) (waiter, error) { return newTimerWaiter(r) }
