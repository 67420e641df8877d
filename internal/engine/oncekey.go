package engine

import (
	"context"
	"fmt"
	"maps"
	"sync"
)

// OncePerKey makes a value once per key for the life of the process: an
// engine's data directory template, made by its installer on the first
// Start for given binaries and settings. Concurrent callers of one key
// wait for one making; a failure is not kept, so the next caller tries
// again; a caller's context ends its wait. The zero value is ready.
type OncePerKey[K comparable, V any] struct {
	mu    sync.Mutex
	slots map[K]*onceSlot[V]
}

type onceSlot[V any] struct {
	// lock is held while the value is made; a channel, so that a waiting
	// caller can give up with its context.
	lock chan struct{}
	made bool
	v    V
}

func (o *OncePerKey[K, V]) slot(key K) *onceSlot[V] {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.slots == nil {
		o.slots = map[K]*onceSlot[V]{}
	}
	s := o.slots[key]
	if s == nil {
		s = &onceSlot[V]{lock: make(chan struct{}, 1)}
		o.slots[key] = s
	}
	return s
}

// Get returns key's value, made by build if no call has made it yet.
func (o *OncePerKey[K, V]) Get(ctx context.Context, key K, build func(context.Context) (V, error)) (V, error) {
	s := o.slot(key)
	select {
	case s.lock <- struct{}{}:
	case <-ctx.Done():
		var zero V
		return zero, fmt.Errorf("wait for another start to make the data directory template: %w", context.Cause(ctx))
	}
	defer func() { <-s.lock }()
	if !s.made {
		v, err := build(ctx)
		if err != nil {
			return v, err
		}
		s.v, s.made = v, true
	}
	return s.v, nil
}

// Set replaces key's value, made or not: for a test that puts into a
// template what must not reach a server, and then puts the template back.
func (o *OncePerKey[K, V]) Set(key K, v V) {
	s := o.slot(key)
	s.lock <- struct{}{}
	s.v, s.made = v, true
	<-s.lock
}

// Each calls f with every value made.
func (o *OncePerKey[K, V]) Each(f func(K, V)) {
	o.mu.Lock()
	slots := maps.Clone(o.slots)
	o.mu.Unlock()
	for k, s := range slots {
		s.lock <- struct{}{}
		if s.made {
			f(k, s.v)
		}
		<-s.lock
	}
}
