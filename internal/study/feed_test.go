package study

import (
	"testing"

	"github.com/dbrig/dbrig/internal/link"
	"github.com/dbrig/dbrig/internal/topology"
)

func keys(events []Event) []string {
	var out []string
	for _, e := range events {
		out = append(out, e.Key)
	}
	return out
}

func TestFeedSubscribersGetEveryEventAfterTheirSnapshot(t *testing.T) {
	t.Parallel()
	f := NewFeed(0)
	f.Publish(Event{Type: EventStart, Key: "a"})
	early, sub := f.Subscribe(8)
	f.Publish(Event{Type: EventPointStart, Key: "b"})
	late, lateSub := f.Subscribe(8)
	f.Publish(Event{Type: EventPoint, Key: "c"})
	f.Close()

	if got := keys(early); len(got) != 1 || got[0] != "a" {
		t.Errorf("first snapshot = %v, want [a]", got)
	}
	if got := keys(late); len(got) != 2 || got[1] != "b" {
		t.Errorf("late snapshot = %v, want [a b]", got)
	}
	var got []Event
	for e := range sub.Events() {
		got = append(got, e)
	}
	if k := keys(got); len(k) != 2 || k[0] != "b" || k[1] != "c" {
		t.Errorf("first subscriber got %v, want [b c]", k)
	}
	if got[0].Seq != 2 || got[1].Seq != 3 {
		t.Errorf("seq = %d, %d, want 2, 3", got[0].Seq, got[1].Seq)
	}
	n := 0
	for range lateSub.Events() {
		n++
	}
	if n != 1 {
		t.Errorf("late subscriber got %d events after its snapshot, want 1", n)
	}
}

// A subscriber that never reads must not hold up the run: it keeps its
// newest events and counts the rest as dropped.
func TestFeedSlowSubscriberDropsOldest(t *testing.T) {
	t.Parallel()
	f := NewFeed(0)
	_, slow := f.Subscribe(4)
	_, fast := f.Subscribe(2000)
	for range 1000 {
		f.Publish(Event{Type: EventSecond})
	}
	if d := slow.Dropped(); d != 996 {
		t.Errorf("slow subscriber dropped %d, want 996", d)
	}
	if d := fast.Dropped(); d != 0 {
		t.Errorf("fast subscriber dropped %d, want 0", d)
	}
	slow.Close()
	slow.Close() // harmless twice
	var seqs []int64
	for e := range slow.Events() {
		seqs = append(seqs, e.Seq)
	}
	if len(seqs) != 4 || seqs[0] != 997 || seqs[3] != 1000 {
		t.Errorf("slow subscriber kept %v, want the newest 997..1000", seqs)
	}
	f.Publish(Event{Type: EventEnd}) // a closed subscription is not offered it
	if len(fast.Events()) != 1001 {
		t.Errorf("fast subscriber holds %d, want 1001", len(fast.Events()))
	}
}

func TestFeedHistoryIsBounded(t *testing.T) {
	t.Parallel()
	f := NewFeed(8)
	for range 20 {
		f.Publish(Event{Type: EventSecond})
	}
	history, sub := f.Subscribe(1)
	defer sub.Close()
	if len(history) > 8 || history[len(history)-1].Seq != 20 {
		t.Fatalf("history holds %d events ending at %d, want at most 8 ending at 20", len(history), history[len(history)-1].Seq)
	}
	if f.Forgotten()+int64(len(history)) != 20 {
		t.Errorf("forgotten %d + kept %d, want 20", f.Forgotten(), len(history))
	}
}

func TestFeedClosedOrNil(t *testing.T) {
	t.Parallel()
	var none *Feed
	none.Publish(Event{Type: EventStart})
	none.Close()
	if h, sub := none.Subscribe(1); h != nil {
		t.Errorf("nil feed's history = %v", h)
	} else if _, open := <-sub.Events(); open {
		t.Error("nil feed's subscription is open")
	}
	f := NewFeed(0)
	f.Publish(Event{Type: EventEnd})
	f.Close()
	f.Close()
	f.Publish(Event{Type: EventStart})
	h, sub := f.Subscribe(1)
	if len(h) != 1 || h[0].Type != EventEnd {
		t.Errorf("closed feed's history = %v, want the end", h)
	}
	if _, open := <-sub.Events(); open {
		t.Error("a subscription to a closed feed is open")
	}
}

func TestLinkSecondsCountsSinceTheLastSecond(t *testing.T) {
	t.Parallel()
	stats := func(fwd, rev, stalls int64) []topology.LinkStats {
		var s link.Stats
		s.Forward.Bytes, s.Reverse.Bytes, s.Forward.WindowStalls = fwd, rev, stalls
		return []topology.LinkStats{{Link: topology.Link{Name: "wan"}, Used: true, Stats: s}, {Link: topology.Link{Name: "idle"}}}
	}
	last := map[string]LinkSecond{}
	linkSeconds(stats(100, 10, 1), last)
	got := linkSeconds(stats(350, 30, 4), last)
	if len(got) != 1 || got[0] != (LinkSecond{Name: "wan", ForwardBytes: 250, ReverseBytes: 20, Stalls: 3}) {
		t.Errorf("second = %+v, want wan 250/20 bytes, 3 stalls", got)
	}
	// New proxies (the next point's) count from zero.
	got = linkSeconds(stats(40, 5, 0), last)
	if got[0].ForwardBytes != 40 || got[0].ReverseBytes != 5 {
		t.Errorf("after a reset = %+v, want 40/5", got[0])
	}
}
