package study

import (
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dbrig/dbrig/internal/workload"
)

// EventType says what an [Event] tells.
type EventType string

// The events a run publishes, in the order a run meets them.
const (
	// EventStart: the run started (Study, Dir, Total points, Done before).
	EventStart EventType = "start"
	// EventPointStart: point N of Total (Key) starts.
	EventPointStart EventType = "point_start"
	// EventSecond: a second of the point's load ended (Second).
	EventSecond EventType = "second"
	// EventLink: a second of the point's links (Links).
	EventLink EventType = "link"
	// EventPoint: point N of Total finished (Point).
	EventPoint EventType = "point"
	// EventError: the run failed (Error).
	EventError EventType = "error"
	// EventEnd: the run ended; Report is its report.html ("" when none).
	EventEnd EventType = "end"
)

// Event is one thing a run tells whoever watches it live (dbrig's
// --dashboard). Seq and T are the feed's: the event's number and its
// seconds since the feed began.
type Event struct {
	Seq    int64            `json:"seq"`
	T      float64          `json:"t"`
	Type   EventType        `json:"type"`
	Study  string           `json:"study,omitempty"`
	Dir    string           `json:"dir,omitempty"`
	Key    string           `json:"key,omitempty"`
	N      int              `json:"n,omitempty"`
	Total  int              `json:"total,omitempty"`
	Done   int              `json:"done,omitempty"`
	Second *workload.Second `json:"second,omitempty"`
	Links  []LinkSecond     `json:"links,omitempty"`
	Point  *PointDone       `json:"point,omitempty"`
	Report string           `json:"report,omitempty"`
	Error  string           `json:"error,omitempty"`
}

// LinkSecond is what crossed one link in a second.
type LinkSecond struct {
	Name         string `json:"name"`
	ForwardBytes int64  `json:"forward_bytes"`
	ReverseBytes int64  `json:"reverse_bytes"`
	// Stalls are the times a sender waited for the window or the send
	// buffer, both ways.
	Stalls int64 `json:"stalls"`
	Lost   int64 `json:"lost_segments"`
}

// PointDone is a finished point as a live view shows it: its headline
// figures beside the model's.
type PointDone struct {
	Key string `json:"key"`
	// Status is measured, failed, skipped or interrupted.
	Status   string     `json:"status"`
	Seconds  float64    `json:"seconds"`
	Figures  []Headline `json:"figures,omitempty"`
	Formula  string     `json:"formula,omitempty"`
	Warnings []string   `json:"warnings,omitempty"`
	Error    string     `json:"error,omitempty"`
}

// pointDone describes a finished point for the feed.
func pointDone(k workload.Kind, r workload.Result) *PointDone {
	p := &PointDone{Key: r.Key, Status: "measured", Seconds: r.Seconds, Formula: r.Formula, Warnings: r.Warnings, Error: r.Error}
	switch {
	case r.Interrupted():
		p.Status = "interrupted"
	case !r.OK():
		p.Status = "failed"
	case r.Skipped != "":
		p.Status, p.Error = "skipped", r.Skipped
	}
	for _, f := range Headlines(k, r) {
		if math.IsNaN(f.Measured) || math.IsInf(f.Measured, 0) {
			continue // JSON has no NaN
		}
		if f.Model != nil && (math.IsNaN(*f.Model) || math.IsInf(*f.Model, 0)) {
			f.Model, f.ModelText = nil, ""
		}
		p.Figures = append(p.Figures, f)
	}
	return p
}

// Feed hands a run's events to its subscribers without ever making the run
// wait: each subscriber has a bounded buffer, and one that falls behind
// loses its oldest events, counted. The feed keeps the run's history so far
// (bounded too) for a subscriber that joins late. Its methods are safe on a
// nil *Feed, which publishes nothing.
type Feed struct {
	mu      sync.Mutex
	begun   time.Time
	seq     int64
	history []Event
	// forgotten counts the events dropped from the history's start.
	forgotten int64
	limit     int
	subs      map[*Subscription]struct{}
	closed    bool
}

// DefaultFeedHistory is the events a feed keeps for late subscribers: nine
// hours of a load's seconds and link seconds.
const DefaultFeedHistory = 1 << 16

// NewFeed makes a feed that keeps at most history events for late
// subscribers (0: DefaultFeedHistory).
func NewFeed(history int) *Feed {
	if history <= 0 {
		history = DefaultFeedHistory
	}
	return &Feed{begun: time.Now(), limit: history, subs: map[*Subscription]struct{}{}}
}

// Publish stamps e and hands it to every subscriber; it never blocks.
func (f *Feed) Publish(e Event) {
	if f == nil {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return
	}
	f.seq++
	e.Seq, e.T = f.seq, time.Since(f.begun).Seconds()
	if len(f.history) >= f.limit {
		// Drop a quarter at once, so that a long run copies the history
		// once in a while rather than on every event.
		cut := max(1, f.limit/4)
		f.history = append(f.history[:0], f.history[cut:]...)
		f.forgotten += int64(cut)
	}
	f.history = append(f.history, e)
	for s := range f.subs {
		s.offer(e)
	}
}

// Subscribe returns the history so far and a subscription to every event
// after it, with a buffer of buffer events (at least 1). After Close, the
// subscription's channel is closed at once.
func (f *Feed) Subscribe(buffer int) ([]Event, *Subscription) {
	s := &Subscription{ch: make(chan Event, max(buffer, 1)), feed: f}
	if f == nil {
		close(s.ch)
		return nil, s
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	history := append([]Event(nil), f.history...)
	if f.closed {
		close(s.ch)
	} else {
		f.subs[s] = struct{}{}
	}
	return history, s
}

// Forgotten counts the events the history no longer holds.
func (f *Feed) Forgotten() int64 {
	if f == nil {
		return 0
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.forgotten
}

// Close ends the feed: every subscription's channel is closed, and later
// events are not published.
func (f *Feed) Close() {
	if f == nil {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return
	}
	f.closed = true
	for s := range f.subs {
		close(s.ch)
		delete(f.subs, s)
	}
}

// Subscription is one subscriber's events.
type Subscription struct {
	ch      chan Event
	dropped atomic.Int64
	feed    *Feed
}

// Events delivers the events after the history Subscribe returned; it is
// closed when the feed closes or the subscription does.
func (s *Subscription) Events() <-chan Event { return s.ch }

// Dropped counts the events this subscriber lost because it fell behind.
func (s *Subscription) Dropped() int64 { return s.dropped.Load() }

// Close ends the subscription. It is safe to call more than once.
func (s *Subscription) Close() {
	f := s.feed
	if f == nil {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.subs[s]; ok {
		delete(f.subs, s)
		close(s.ch)
	}
}

// offer hands e to the subscriber, dropping its oldest event when its
// buffer is full. The feed's lock is held: offer is the channel's only
// sender, so after a receive there is room.
func (s *Subscription) offer(e Event) {
	select {
	case s.ch <- e:
		return
	default:
	}
	select {
	case <-s.ch:
		s.dropped.Add(1)
	default: // the subscriber took one meanwhile
	}
	select {
	case s.ch <- e:
	default:
		s.dropped.Add(1)
	}
}
