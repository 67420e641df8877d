// Package monitor samples a database server while a workload runs: its
// client sessions (how many, how many running a statement, how many
// waiting and on what) and, for a server dbrig started on this machine, the
// CPU its processes use. It does so over a connection of its own that the
// workload cannot crowd out (engine.Monitored: PostgreSQL's reserved
// superuser slots, MariaDB's extra_port), which is seed 002's dedicated
// administrator connection: the way in that still works when the server's
// connections are exhausted.
//
// A sample that could not be taken is kept, with the reason, never dropped:
// a report says when the server could not be watched, which is itself a
// finding (the server was too busy or refused dbrig's connection).
package monitor

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/dbrig/dbrig/internal/engine"
	"github.com/dbrig/dbrig/internal/units"
)

// Sample is one moment of a server.
type Sample struct {
	// At is seconds since sampling started.
	At float64 `json:"t"`
	// Error says why the sessions could not be read ("" when they were).
	Error string `json:"error,omitempty"`
	// Sessions are the clients' sessions (dbrig's monitoring one aside);
	// Active those running a statement; Waiting those of the active that
	// wait (on a lock, I/O, the client ...); IdleInTx those idle inside a
	// transaction (PostgreSQL only).
	Sessions int `json:"sessions"`
	Active   int `json:"active"`
	Waiting  int `json:"waiting"`
	IdleInTx int `json:"idle_in_tx,omitempty"`
	// Waits count active sessions by what they wait on: PostgreSQL's
	// wait_event_type:wait_event, MariaDB's "row lock" (InnoDB lock waits)
	// or the thread's state.
	Waits map[string]int `json:"waits,omitempty"`
	// CPU is the CPUs the server's processes kept busy since the previous
	// sample, or since sampling started (1.5 = one and a half CPUs); -1
	// when unknown (a target, whose processes dbrig cannot see).
	CPU float64 `json:"cpu"`
}

// OK reports whether the sessions were read.
func (s Sample) OK() bool { return s.Error == "" }

// Series is one server's samples over a point.
type Series struct {
	Instance string `json:"instance"`
	Engine   string `json:"engine"`
	// Via says which connection the samples came through.
	Via      string   `json:"via"`
	Interval float64  `json:"interval_s"`
	Samples  []Sample `json:"samples"`
}

// Missed are the samples whose sessions could not be read.
func (s Series) Missed() []Sample {
	var out []Sample
	for _, x := range s.Samples {
		if !x.OK() {
			out = append(out, x)
		}
	}
	return out
}

// MissedLine says when samples could not be taken and why, in one line:
// "3 of 20 samples of db could not be taken (at 4s, 5s, 6s: connect: too
// many clients)"; "" when none was missed.
func (s Series) MissedLine() string {
	missed := s.Missed()
	if len(missed) == 0 {
		return ""
	}
	byReason := map[string][]string{}
	var reasons []string
	for _, m := range missed {
		if _, ok := byReason[m.Error]; !ok {
			reasons = append(reasons, m.Error)
		}
		if len(byReason[m.Error]) < 8 {
			byReason[m.Error] = append(byReason[m.Error], units.FormatDuration(time.Duration(m.At*1e9).Round(time.Millisecond)))
		} else if len(byReason[m.Error]) == 8 {
			byReason[m.Error] = append(byReason[m.Error], "...")
		}
	}
	var parts []string
	for _, r := range reasons {
		parts = append(parts, "at "+strings.Join(byReason[r], ", ")+": "+r)
	}
	return fmt.Sprintf("%d of %d samples of %s could not be taken (%s)", len(missed), len(s.Samples), s.Instance, strings.Join(parts, "; "))
}

// Summary is a series in a few figures.
type Summary struct {
	Taken, Missed             int
	MeanSessions, MaxSessions float64
	MeanActive, MeanWaiting   float64
	// MeanCPU is the server's mean CPUs busy, -1 when unknown.
	MeanCPU float64
	// TopWaits are the most frequent waits, with their mean sessions.
	TopWaits []string
}

// Summarize averages the samples that were taken.
func (s Series) Summarize() Summary {
	sum := Summary{MeanCPU: -1}
	var cpu float64
	cpuN := 0
	waits := map[string]int{}
	for _, x := range s.Samples {
		if x.CPU >= 0 {
			cpu += x.CPU
			cpuN++
		}
		if !x.OK() {
			sum.Missed++
			continue
		}
		sum.Taken++
		sum.MeanSessions += float64(x.Sessions)
		sum.MaxSessions = max(sum.MaxSessions, float64(x.Sessions))
		sum.MeanActive += float64(x.Active)
		sum.MeanWaiting += float64(x.Waiting)
		for k, v := range x.Waits {
			waits[k] += v
		}
	}
	if sum.Taken > 0 {
		n := float64(sum.Taken)
		sum.MeanSessions /= n
		sum.MeanActive /= n
		sum.MeanWaiting /= n
		keys := slices.Collect(maps.Keys(waits))
		sort.Slice(keys, func(i, j int) bool {
			if waits[keys[i]] != waits[keys[j]] {
				return waits[keys[i]] > waits[keys[j]]
			}
			return keys[i] < keys[j]
		})
		for _, k := range keys[:min(3, len(keys))] {
			sum.TopWaits = append(sum.TopWaits, fmt.Sprintf("%s %.1f", k, float64(waits[k])/n))
		}
	}
	if cpuN > 0 {
		sum.MeanCPU = cpu / float64(cpuN)
	}
	return sum
}

// DefaultInterval is how often a server is sampled.
const DefaultInterval = time.Second

// source reads one server's sessions over one connection.
type source interface {
	read(ctx context.Context) (Sample, error)
	close()
}

// opener connects a source.
type opener func(ctx context.Context) (source, error)

// Sampler samples one server until stopped.
type Sampler struct {
	series   Series
	open     opener
	pid      int
	interval time.Duration
	stop     context.CancelFunc
	done     chan struct{}
	mu       sync.Mutex
}

// Start connects to the instance's monitoring login for database db and
// samples it every interval (DefaultInterval when 0) until Stop, through a
// session of the instance's engine, which says how to read what the
// server's sessions do (engine.ActivityReader). It returns once the first
// connection is made or has failed, so that a workload started afterwards
// finds the monitoring connection already in place; a failure is recorded
// in the samples, not returned.
func Start(ctx context.Context, engines *engine.Registry, inst engine.Instance, db string, interval time.Duration) *Sampler {
	if interval <= 0 {
		interval = DefaultInterval
	}
	reader, _ := lookupReader(engines, inst.Engine())
	login, via := monitorLogin(inst, reader, db)
	s := &Sampler{
		series:   Series{Instance: inst.Name(), Engine: inst.Engine(), Via: via, Interval: interval.Seconds()},
		open:     openerFor(engines, reader, login),
		interval: interval,
		done:     make(chan struct{}),
	}
	if inst.Owned() {
		s.pid = inst.PID()
	}
	ctx, s.stop = context.WithCancel(ctx)
	first, err := s.connect(ctx)
	go s.loop(ctx, first, err) // ends when Stop cancels ctx
	return s
}

// lookupReader finds the engine's reader of its sessions' activity.
func lookupReader(engines *engine.Registry, name string) (engine.ActivityReader, bool) {
	if engines == nil {
		return nil, false
	}
	e, ok := engines.Lookup(name)
	if !ok {
		return nil, false
	}
	r, ok := e.(engine.ActivityReader)
	return r, ok
}

func monitorLogin(inst engine.Instance, reader engine.ActivityReader, db string) (engine.Conn, string) {
	if m, ok := inst.(engine.Monitored); ok {
		if c, ok := m.MonitorLogin(db); ok {
			via := "dbrig's own login"
			if reader != nil {
				via = reader.MonitorVia(c)
			}
			return c, via
		}
	}
	c := inst.Login(db)
	return c, "the target's login (" + c.String() + "): no connection slot is reserved for it"
}

// sessionSource reads the activity through one session of the engine.
type sessionSource struct {
	s      engine.Session
	reader engine.ActivityReader
}

func (src sessionSource) read(ctx context.Context) (Sample, error) {
	a, err := src.reader.ReadActivity(ctx, src.s)
	if err != nil {
		return Sample{}, err
	}
	return Sample{Sessions: a.Sessions, Active: a.Active, Waiting: a.Waiting, IdleInTx: a.IdleInTx, Waits: a.Waits}, nil
}

func (src sessionSource) close() {
	ctx, cancel := context.WithTimeout(context.Background(), connectTimeout)
	defer cancel()
	_ = src.s.Close(ctx)
}

func openerFor(engines *engine.Registry, reader engine.ActivityReader, login engine.Conn) opener {
	if reader == nil {
		return func(context.Context) (source, error) {
			return nil, fmt.Errorf("no sampler for engine %q", login.Engine)
		}
	}
	return func(ctx context.Context) (source, error) {
		s, err := engines.OpenSession(ctx, login, engine.SessionOptions{Application: "dbrig monitor"})
		if err != nil {
			return nil, err
		}
		return sessionSource{s: s, reader: reader}, nil
	}
}

// connectTimeout bounds one connection attempt.
const connectTimeout = 2 * time.Second

func (s *Sampler) connect(ctx context.Context) (source, error) {
	cctx, cancel := context.WithTimeout(ctx, min(connectTimeout, 2*s.interval))
	defer cancel()
	src, err := s.open(cctx)
	if err != nil {
		return nil, fmt.Errorf("connect: %w", err)
	}
	return src, nil
}

func (s *Sampler) loop(ctx context.Context, src source, connErr error) {
	defer close(s.done)
	defer func() {
		if src != nil {
			src.close()
		}
	}()
	start := time.Now()
	lastCPU, lastAt, haveCPU := 0.0, start, false
	if s.pid > 0 {
		lastCPU, haveCPU = TreeCPU(s.pid)
	}
	t := time.NewTicker(s.interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		now := time.Now()
		var smp Sample
		var err error
		if src == nil && connErr == nil {
			src, err = s.connect(ctx)
		} else if src == nil {
			err, connErr = connErr, nil
		}
		if src != nil {
			qctx, cancel := context.WithTimeout(ctx, s.interval*9/10)
			smp, err = src.read(qctx)
			cancel()
			if err != nil {
				// Whatever broke, the next sample starts from a new
				// connection.
				src.close()
				src = nil
				err = fmt.Errorf("read the sessions: %w", err)
			}
		}
		if ctx.Err() != nil {
			return // stopped while sampling: not a sample that failed
		}
		if err != nil {
			smp = Sample{Error: oneLine(err)}
		}
		smp.At = now.Sub(start).Seconds()
		smp.CPU = -1
		if haveCPU {
			if c, ok := TreeCPU(s.pid); ok {
				smp.CPU = max(c-lastCPU, 0) / now.Sub(lastAt).Seconds()
				lastCPU, lastAt = c, now
			}
		}
		s.mu.Lock()
		s.series.Samples = append(s.series.Samples, smp)
		s.mu.Unlock()
	}
}

func oneLine(err error) string {
	return strings.Join(strings.Fields(err.Error()), " ")
}

// Stop ends sampling and returns the series.
func (s *Sampler) Stop() Series {
	s.stop()
	<-s.done
	return s.Series()
}

// Series is a copy of the samples so far.
func (s *Sampler) Series() Series {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.series
	out.Samples = slices.Clone(s.series.Samples)
	return out
}
