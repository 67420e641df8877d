// Package topology brings a study's sites up and down together: the
// database instances at their sites and the links between sites. A client
// asks it how to reach a database from a site, and gets a direct connection
// (same site, "unix" or "direct" links) or one through an emulated link.
//
// Instances are kept running from one combination of a sweep to the next
// when their settings do not change, since starting PostgreSQL costs a
// second or two; links are made anew for every point so that their
// statistics belong to that point alone.
package topology

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/dbrig/dbrig/internal/engine/postgres"
	"github.com/dbrig/dbrig/internal/link"
)

// Instance is a database server the topology should run.
type Instance struct {
	Name     string
	Engine   string // "postgres"
	Site     string
	Settings map[string]string
}

// Link joins two sites.
type Link struct {
	Name    string
	Between [2]string
	Mode    string // "unix", "direct" or "link"
	Profile string
	Config  link.Config
}

// Endpoint is how a client reaches one database.
type Endpoint struct {
	Conn postgres.ConnInfo
	// Link names the link crossed ("" when on the same site).
	Link string
	// Transport is "unix", "tcp" (direct loopback) or "link".
	Transport string
}

// Options configure where and how instances run.
type Options struct {
	Binaries postgres.Binaries // zero: found on first use
	BaseDir  string
	Keep     bool
	Log      *slog.Logger
	// SeriesInterval is the links' time-series bucket (0 = link default).
	SeriesInterval time.Duration
}

// Topology owns running instances and links. Its methods are safe for
// concurrent use.
type Topology struct {
	opts Options

	mu        sync.Mutex
	instances map[string]*running
	links     []Link
	proxies   map[string]*proxyRef // by link name + "/" + instance
	closed    bool
}

type running struct {
	spec Instance
	inst *postgres.Instance
}

type proxyRef struct {
	link  Link
	proxy *link.Proxy
}

// New makes an empty topology.
func New(opts Options) *Topology {
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	return &Topology{opts: opts, instances: map[string]*running{}, proxies: map[string]*proxyRef{}}
}

// Apply makes the running topology match the given instances and links:
// instances whose engine, site or settings changed are restarted, unused
// ones stopped, missing ones started (several at once). It reports the
// names of instances that are new, whose data is therefore empty.
func (t *Topology) Apply(ctx context.Context, instances []Instance, links []Link) (fresh []string, err error) {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return nil, errors.New("topology is closed")
	}
	t.closeProxiesLocked()
	t.links = slices.Clone(links)
	want := map[string]Instance{}
	for _, in := range instances {
		want[in.Name] = in
	}
	var stop []*running
	for name, r := range t.instances {
		w, ok := want[name]
		if !ok || !sameInstance(w, r.spec) {
			stop = append(stop, r)
			delete(t.instances, name)
		}
	}
	var start []Instance
	for _, in := range instances {
		if _, ok := t.instances[in.Name]; !ok {
			start = append(start, in)
		}
	}
	t.mu.Unlock()

	var errs []error
	for _, r := range stop {
		if err := r.inst.Stop(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if t.opts.Binaries.Dir == "" && len(start) > 0 {
		bin, err := postgres.FindBinaries(ctx, "")
		if err != nil {
			return nil, err
		}
		t.opts.Binaries = bin
	}
	started := make([]*postgres.Instance, len(start))
	errs = make([]error, len(start))
	var wg sync.WaitGroup
	for i, in := range start {
		wg.Go(func() {
			if in.Engine != "postgres" {
				errs[i] = fmt.Errorf("instance %q: engine %q is not supported", in.Name, in.Engine)
				return
			}
			started[i], errs[i] = postgres.Start(ctx, postgres.Options{
				Name: in.Name, Binaries: t.opts.Binaries, Settings: in.Settings,
				BaseDir: t.opts.BaseDir, Keep: t.opts.Keep, Logger: t.opts.Log,
			})
		})
	}
	wg.Wait()

	t.mu.Lock()
	defer t.mu.Unlock()
	for i, inst := range started {
		if inst == nil {
			continue
		}
		if t.closed { // closed while starting: do not leak the server
			errs = append(errs, inst.Stop(context.WithoutCancel(ctx)), errors.New("topology closed while starting"))
			continue
		}
		t.instances[start[i].Name] = &running{spec: start[i], inst: inst}
		fresh = append(fresh, start[i].Name)
	}
	return fresh, errors.Join(errs...)
}

func sameInstance(a, b Instance) bool {
	return a.Engine == b.Engine && a.Site == b.Site && maps.Equal(a.Settings, b.Settings)
}

// Instance returns a running instance by name, or nil.
func (t *Topology) Instance(name string) *postgres.Instance {
	t.mu.Lock()
	defer t.mu.Unlock()
	if r, ok := t.instances[name]; ok {
		return r.inst
	}
	return nil
}

// Conn says how a client at site from reaches database db of an instance.
// Across a link with Mode "link" it starts (once per link and instance) a
// proxy that forwards to the instance through the emulated link.
func (t *Topology) Conn(ctx context.Context, from, instance, db string) (Endpoint, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	r, ok := t.instances[instance]
	if !ok {
		return Endpoint{}, fmt.Errorf("no running instance %q", instance)
	}
	if from == r.spec.Site {
		return Endpoint{Conn: r.inst.UnixConn(db), Transport: "unix"}, nil
	}
	l, ok := t.linkBetween(from, r.spec.Site)
	if !ok {
		return Endpoint{}, fmt.Errorf("no link joins site %q to instance %q at site %q", from, instance, r.spec.Site)
	}
	switch l.Mode {
	case "unix":
		return Endpoint{Conn: r.inst.UnixConn(db), Link: l.Name, Transport: "unix"}, nil
	case "direct":
		return Endpoint{Conn: r.inst.Conn(db), Link: l.Name, Transport: "tcp"}, nil
	}
	key := l.Name + "/" + instance
	ref, ok := t.proxies[key]
	if !ok {
		var opts []link.Option
		if t.opts.SeriesInterval > 0 {
			opts = append(opts, link.WithSeriesInterval(t.opts.SeriesInterval))
		}
		p, err := link.Listen(ctx, "127.0.0.1:0", r.inst.Conn(db).Addr(), l.Config, opts...)
		if err != nil {
			return Endpoint{}, fmt.Errorf("link %q to instance %q: %w", l.Name, instance, err)
		}
		ref = &proxyRef{link: l, proxy: p}
		t.proxies[key] = ref
	}
	ci, err := r.inst.Conn(db).Via(ref.proxy.Addr())
	if err != nil {
		return Endpoint{}, err
	}
	return Endpoint{Conn: ci, Link: l.Name, Transport: "link"}, nil
}

func (t *Topology) linkBetween(a, b string) (Link, bool) {
	for _, l := range t.links {
		if (l.Between[0] == a && l.Between[1] == b) || (l.Between[0] == b && l.Between[1] == a) {
			return l, true
		}
	}
	return Link{}, false
}

// LinkStats is what one link carried since the last Apply, summed over the
// proxies it runs (one per instance reached through it).
type LinkStats struct {
	Link  Link
	Stats link.Stats
	Used  bool
}

// Stats returns every link's statistics, in the order the links were given.
func (t *Topology) Stats() []LinkStats {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []LinkStats
	for _, l := range t.links {
		ls := LinkStats{Link: l}
		for _, ref := range t.proxies {
			if ref.link.Name == l.Name {
				ls.Stats = mergeStats(ls.Stats, ref.proxy.Stats(), ls.Used)
				ls.Used = true
			}
		}
		out = append(out, ls)
	}
	return out
}

// Proxies returns the live proxies of a link (for fault injection).
func (t *Topology) Proxies(linkName string) []*link.Proxy {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []*link.Proxy
	for _, ref := range t.proxies {
		if ref.link.Name == linkName {
			out = append(out, ref.proxy)
		}
	}
	return out
}

// ResetLinks closes every proxy; the next Conn makes new ones with fresh
// statistics.
func (t *Topology) ResetLinks() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.closeProxiesLocked()
}

func (t *Topology) closeProxiesLocked() {
	for k, ref := range t.proxies {
		_ = ref.proxy.Close()
		delete(t.proxies, k)
	}
}

// Close stops every proxy and instance. It is safe to call more than once.
func (t *Topology) Close(ctx context.Context) error {
	t.mu.Lock()
	t.closed = true
	t.closeProxiesLocked()
	insts := t.instances
	t.instances = map[string]*running{}
	t.mu.Unlock()

	errs := make([]error, 0, len(insts))
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, r := range insts {
		wg.Go(func() {
			err := r.inst.Stop(ctx)
			mu.Lock()
			errs = append(errs, err)
			mu.Unlock()
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}
