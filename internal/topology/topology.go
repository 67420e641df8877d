// Package topology brings a study's sites up and down together: the
// database instances at their sites and the links between sites. A client
// asks it how to reach a database from a site, and gets a direct connection
// (same site, "unix" or "direct" links) or one through an emulated link.
//
// Instances live from one point of a sweep to the next: an instance whose
// configuration is unchanged keeps running; one that differs only in its
// settings is reconfigured in place (reloaded, or restarted on the same
// data), so the workload's data survives; any other change makes a new
// instance. Targets (the user's own servers) are attached once and never
// changed. Links are made anew for every point so that their statistics
// belong to that point alone.
package topology

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/dbrig/dbrig/internal/engine"
	"github.com/dbrig/dbrig/internal/link"
)

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
	Conn engine.Conn
	// Link names the link crossed ("" when on the same site).
	Link string
	// Transport is "unix", "tcp" (direct loopback) or "link".
	Transport string
	// Upstream and LinkConfig are, over a link, the server's own address
	// and the link's model: what a client on another host needs to run
	// the link in front of itself (load agents), since it cannot reach
	// this process's loopback.
	Upstream   string
	LinkConfig link.Config
}

// Unreachable says a point asks for a path to an instance that the
// instance cannot give (the unix socket of a target reached over TCP): the
// point is skipped, with Reason, rather than failed.
type Unreachable struct{ Reason string }

func (u *Unreachable) Error() string { return u.Reason }

// Options configure where and how instances run.
type Options struct {
	Engines *engine.Registry
	// Start is how owned instances start (base directory, keep, log).
	Start engine.StartOptions
	// Targets are the user's servers standing in for instances, by
	// instance name.
	Targets map[string]engine.Conn
	Log     *slog.Logger
	// SeriesInterval is the links' time-series bucket (0 = link default).
	SeriesInterval time.Duration
	// Sites start the instances of sites placed on other hosts, by site
	// name (a study's [site.NAME] host); instances of other sites start
	// here.
	Sites map[string]Starter
}

// Starter starts owned instances somewhere other than this process's
// machine: a load agent on a site's host. The instance it returns reaches
// its server across the real network.
type Starter interface {
	Start(ctx context.Context, cfg engine.InstanceConfig, opts engine.StartOptions) (engine.Instance, error)
}

// Change says what Apply did to one instance.
type Change string

const (
	Kept         Change = "kept"          // unchanged, still running
	Reloaded     Change = "reloaded"      // settings changed at run time
	Restarted    Change = "restarted"     // restarted in place on its data
	Started      Change = "started"       // new: its data is empty
	Attached     Change = "attached"      // a target, attached for this run
	KeptAttached Change = "kept-attached" // a target attached before, still attached
)

// Fresh reports whether the instance's data is new (a workload must
// prepare it).
func (c Change) Fresh() bool { return c == Started || c == Attached }

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
	cfg  engine.InstanceConfig
	inst engine.Instance
	// session holds the study's session-level settings, applied to every
	// login of a target (whose server settings dbrig never changes).
	session map[string]string
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
	if opts.Start.Log == nil {
		opts.Start.Log = opts.Log
	}
	return &Topology{opts: opts, instances: map[string]*running{}, proxies: map[string]*proxyRef{}}
}

// Apply makes the running topology match the given instances and links and
// reports what it did to each instance, by name. Instances are started and
// stopped several at once.
func (t *Topology) Apply(ctx context.Context, instances []engine.InstanceConfig, links []Link) (map[string]Change, error) {
	p, err := t.plan(instances, links)
	if err != nil {
		return nil, err
	}
	if err := t.each(len(p.stop), func(i int) error { return p.stop[i].inst.Stop(ctx) }); err != nil {
		return nil, err
	}
	if err := t.reconfigure(ctx, p); err != nil {
		return nil, err
	}
	started := make([]*running, len(p.start))
	err = t.each(len(p.start), func(i int) error {
		r, err := t.bringUp(ctx, p.start[i])
		started[i] = r
		return err
	})
	return t.adopt(ctx, p, started, err)
}

// applyPlan is what Apply does to each instance, and what it did so far.
type applyPlan struct {
	want        map[string]engine.InstanceConfig
	changes     map[string]Change
	stop        []*running
	reconfigure []*running
	start       []engine.InstanceConfig
}

// plan sorts the running instances into kept, reconfigured in place and
// stopped, and the wanted ones into those to start; the stopped ones
// leave the topology, and its proxies close for the point's links.
func (t *Topology) plan(instances []engine.InstanceConfig, links []Link) (*applyPlan, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return nil, errors.New("topology is closed")
	}
	t.closeProxiesLocked()
	t.links = slices.Clone(links)
	p := &applyPlan{want: map[string]engine.InstanceConfig{}, changes: map[string]Change{}}
	for _, in := range instances {
		p.want[in.Name] = in
	}
	for name, r := range t.instances {
		w, ok := p.want[name]
		switch {
		case ok && r.cfg.Equal(w):
			p.changes[name] = Kept
			if w.Target != "" {
				p.changes[name] = KeptAttached
			}
		case ok && r.cfg.SameServer(w) && r.inst.Owned() && !t.fixedAtInitChanged(r.cfg, w):
			p.reconfigure = append(p.reconfigure, r)
		default:
			p.stop = append(p.stop, r)
			delete(t.instances, name)
		}
	}
	for _, in := range instances {
		if _, ok := t.instances[in.Name]; !ok {
			p.start = append(p.start, in)
		}
	}
	return p, nil
}

// reconfigure changes the settings of the instances kept in place,
// reloaded or restarted as each engine needs.
func (t *Topology) reconfigure(ctx context.Context, p *applyPlan) error {
	var mu sync.Mutex
	return t.each(len(p.reconfigure), func(i int) error {
		r := p.reconfigure[i]
		w := p.want[r.cfg.Name]
		restarted, err := r.inst.Reconfigure(ctx, w.Settings)
		mu.Lock()
		defer mu.Unlock()
		r.cfg = w
		p.changes[w.Name] = Reloaded
		if restarted {
			p.changes[w.Name] = Restarted
		}
		return err
	})
}

// adopt adds the instances started (those that started before startErr
// too) to the topology, or stops them when it closed meanwhile.
func (t *Topology) adopt(ctx context.Context, p *applyPlan, started []*running, startErr error) (map[string]Change, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	var errs []error
	for i, r := range started {
		if r == nil {
			continue
		}
		if t.closed { // closed while starting: do not leak the server
			errs = append(errs, r.inst.Stop(context.WithoutCancel(ctx)), errors.New("topology closed while starting"))
			continue
		}
		t.instances[p.start[i].Name] = r
		p.changes[p.start[i].Name] = Started
		if p.start[i].Target != "" {
			p.changes[p.start[i].Name] = Attached
		}
	}
	return p.changes, errors.Join(append(errs, startErr)...)
}

// fixedAtInitChanged reports whether a setting the engine fixes when the
// data directory is made changes: the instance must be made anew.
func (t *Topology) fixedAtInitChanged(have, want engine.InstanceConfig) bool {
	e, ok := t.opts.Engines.Lookup(have.Engine)
	if !ok {
		return false
	}
	f, ok := e.(engine.InitFixer)
	if !ok {
		return false
	}
	name, changed := f.FixedAtInitChanged(have.Settings, want.Settings)
	if changed {
		t.opts.Log.Info("a setting fixed when the data directory is made changes: a new instance", "instance", have.Name, "setting", name)
	}
	return changed
}

// each runs f(0..n-1) concurrently and joins their errors.
func (t *Topology) each(n int, f func(i int) error) error {
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { errs[i] = f(i) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// bringUp starts an owned instance or attaches a target.
func (t *Topology) bringUp(ctx context.Context, cfg engine.InstanceConfig) (*running, error) {
	eng, ok := t.opts.Engines.Lookup(cfg.Engine)
	if !ok {
		return nil, fmt.Errorf("instance %q: unknown engine %q (dbrig has: %s)", cfg.Name, cfg.Engine, strings.Join(t.opts.Engines.Names(), ", "))
	}
	if st, ok := t.opts.Sites[cfg.Site]; ok && cfg.Target == "" {
		inst, err := st.Start(ctx, cfg, t.opts.Start)
		if err != nil {
			return nil, err
		}
		return &running{cfg: cfg, inst: inst}, nil
	}
	if cfg.Target == "" {
		inst, err := eng.Start(ctx, cfg, t.opts.Start)
		if noDisk := (engine.DisksUnavailable{}); errors.As(err, &noDisk) {
			return nil, &Unreachable{Reason: noDisk.Reason}
		}
		if err != nil {
			return nil, err
		}
		return &running{cfg: cfg, inst: inst}, nil
	}
	login, ok := t.opts.Targets[cfg.Name]
	if !ok {
		return nil, fmt.Errorf("instance %q stands for a target, but no --target %s=URI was given", cfg.Name, cfg.Name)
	}
	inst, err := eng.Attach(ctx, cfg.Name, login, engine.AttachOptions{Keep: t.opts.Start.Keep, Log: t.opts.Log})
	if err != nil {
		return nil, err
	}
	// The server-level ones stay as the target has them: the study
	// compares and records them (dbrig never changes a target).
	session, _ := eng.SplitSettings(ctx, cfg.Settings)
	return &running{cfg: cfg, inst: inst, session: session}, nil
}

// Instance returns a running instance by name, or nil.
func (t *Topology) Instance(name string) engine.Instance {
	t.mu.Lock()
	defer t.mu.Unlock()
	if r, ok := t.instances[name]; ok {
		return r.inst
	}
	return nil
}

// Conn says how a client at site from reaches database db of an instance.
// Across a link with Mode "link" it starts (once per link and instance) a
// proxy that forwards to the instance through the emulated link. It
// returns an *Unreachable error when the instance cannot give the path
// the link asks for.
func (t *Topology) Conn(ctx context.Context, from, instance, db string) (Endpoint, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	r, ok := t.instances[instance]
	if !ok {
		return Endpoint{}, fmt.Errorf("no running instance %q", instance)
	}
	tcp := r.inst.Login(db).WithSession(r.session)
	unix := func(linkName string) (Endpoint, error) {
		c, ok := r.inst.UnixLogin(db)
		if !ok {
			example := "a connection string that names its unix socket"
			if e, ok := t.opts.Engines.Lookup(r.inst.Engine()); ok {
				example = engine.SocketExample(e)
			}
			return Endpoint{}, &Unreachable{Reason: fmt.Sprintf("instance %q is the user's server reached over TCP: it has no unix socket dbrig can reach (to measure the socket, give --target %s=URI naming it, e.g. %s)", instance, instance, example)}
		}
		return Endpoint{Conn: c.WithSession(r.session), Link: linkName, Transport: "unix"}, nil
	}
	if from == r.cfg.Site {
		if ep, err := unix(""); err == nil {
			return ep, nil
		}
		return Endpoint{Conn: tcp, Transport: "tcp"}, nil
	}
	l, ok := t.linkBetween(from, r.cfg.Site)
	if !ok {
		return Endpoint{}, fmt.Errorf("no link joins site %q to instance %q at site %q", from, instance, r.cfg.Site)
	}
	switch l.Mode {
	case "unix":
		return unix(l.Name)
	case "direct":
		return Endpoint{Conn: tcp, Link: l.Name, Transport: "tcp"}, nil
	}
	key := l.Name + "/" + instance
	ref, ok := t.proxies[key]
	if !ok {
		var opts []link.Option
		if t.opts.SeriesInterval > 0 {
			opts = append(opts, link.WithSeriesInterval(t.opts.SeriesInterval))
		}
		p, err := link.Listen(ctx, "127.0.0.1:0", tcp.Addr(), l.Config, opts...)
		if err != nil {
			return Endpoint{}, fmt.Errorf("link %q to instance %q: %w", l.Name, instance, err)
		}
		ref = &proxyRef{link: l, proxy: p}
		t.proxies[key] = ref
	}
	ci, err := tcp.Via(ref.proxy.Addr())
	if err != nil {
		return Endpoint{}, err
	}
	return Endpoint{Conn: ci, Link: l.Name, Transport: "link", Upstream: tcp.Addr(), LinkConfig: l.Config}, nil
}

// Via returns the address through which a process at site from reaches
// upstream, a listener at site to, across the link that joins the sites
// (upstream itself on the same site or over a direct link): for byte
// streams of a workload's own between sites, such as a backup shipped to
// a subscriber. The proxy is the link's: its statistics count the stream,
// and it closes with the link.
func (t *Topology) Via(ctx context.Context, from, to, upstream string) (string, error) {
	if from == to {
		return upstream, nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	l, ok := t.linkBetween(from, to)
	if !ok {
		return "", fmt.Errorf("no link joins site %q to site %q", from, to)
	}
	if l.Mode != "link" {
		return upstream, nil
	}
	key := l.Name + "/" + upstream
	ref, ok := t.proxies[key]
	if !ok {
		var opts []link.Option
		if t.opts.SeriesInterval > 0 {
			opts = append(opts, link.WithSeriesInterval(t.opts.SeriesInterval))
		}
		p, err := link.Listen(ctx, "127.0.0.1:0", upstream, l.Config, opts...)
		if err != nil {
			return "", fmt.Errorf("link %q to %s: %w", l.Name, upstream, err)
		}
		ref = &proxyRef{link: l, proxy: p}
		t.proxies[key] = ref
	}
	return ref.proxy.Addr(), nil
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
