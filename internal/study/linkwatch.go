package study

import (
	"sync"
	"time"

	"github.com/dbrig/dbrig/internal/topology"
)

// linkWatchInterval is how often a live view sees the links' traffic.
const linkWatchInterval = time.Second

// watchLinks publishes what crossed each used link every second while a
// point's workload runs, from the links' own counters; stop ends the
// watch and waits for it. Without a feed it watches nothing.
func (r *Runner) watchLinks(topo *topology.Topology, key string) (stop func()) {
	if r.Events == nil {
		return func() {}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(linkWatchInterval)
		defer tick.Stop()
		last := map[string]LinkSecond{}
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				if links := linkSeconds(topo.Stats(), last); len(links) > 0 {
					r.Events.Publish(Event{Type: EventLink, Key: key, Links: links})
				}
			}
		}
	})
	return func() { close(done); wg.Wait() }
}

// linkSeconds are the used links' counts since last (their totals then),
// which it updates. A link's proxies made anew count from zero again.
func linkSeconds(stats []topology.LinkStats, last map[string]LinkSecond) []LinkSecond {
	var out []LinkSecond
	for _, ls := range stats {
		if !ls.Used {
			continue
		}
		s := ls.Stats
		now := LinkSecond{Name: ls.Link.Name, ForwardBytes: s.Forward.Bytes, ReverseBytes: s.Reverse.Bytes,
			Stalls: s.Forward.WindowStalls + s.Reverse.WindowStalls, Lost: s.Forward.LostSegments + s.Reverse.LostSegments}
		prev := last[now.Name]
		last[now.Name] = now
		if now.ForwardBytes < prev.ForwardBytes || now.ReverseBytes < prev.ReverseBytes {
			prev = LinkSecond{}
		}
		out = append(out, LinkSecond{Name: now.Name, ForwardBytes: now.ForwardBytes - prev.ForwardBytes,
			ReverseBytes: now.ReverseBytes - prev.ReverseBytes, Stalls: max(0, now.Stalls-prev.Stalls), Lost: max(0, now.Lost-prev.Lost)})
	}
	return out
}
