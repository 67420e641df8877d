//go:build !linux

package load

import (
	"context"
	"errors"
)

func newPreciseWaiter(r *Runner, stop context.Context) (movableWaiter, error) {
	return newTimerWaiter(r)
}

func newThreadWaiter(*Runner, context.Context) (waiter, error) {
	return nil, errors.New("a thread's own sleep needs Linux")
}
