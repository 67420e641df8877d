package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/dbrig/dbrig/internal/dashboard"
	"github.com/dbrig/dbrig/internal/engine"
	"github.com/dbrig/dbrig/internal/study"
)

// dashboardFlags are --dashboard and --dashboard-linger, one definition
// for run and every load command.
type dashboardFlags struct {
	addr   string
	linger time.Duration
}

func (f *dashboardFlags) register(fl *pflag.FlagSet) {
	fl.StringVar(&f.addr, "dashboard", "", "serve a live page of the run at http://`[HOST:]PORT`/ while it runs (PORT or :PORT: on 127.0.0.1; 0 picks a free port); a HOST beyond loopback serves the page, which has no login, to the network")
	fl.DurationVar(&f.linger, "dashboard-linger", 0, "with --dashboard: keep serving the page and the report this `DURATION` after the run ends (Ctrl-C ends it sooner)")
}

// listenAddr is where --dashboard listens, and whether it is beyond
// loopback: PORT alone or :PORT is 127.0.0.1's.
func (f *dashboardFlags) listenAddr() (addr string, exposed bool, err error) {
	if f.linger < 0 {
		return "", false, fmt.Errorf("--dashboard-linger %s: want a duration of 0 or more", f.linger)
	}
	if f.addr == "" {
		if f.linger > 0 {
			return "", false, errors.New("--dashboard-linger: goes with --dashboard")
		}
		return "", false, nil
	}
	bad := func(why string) error {
		return fmt.Errorf("--dashboard %s: %s (want [HOST:]PORT, such as 8080, :0 or 127.0.0.1:8080)", f.addr, why)
	}
	hostPort := f.addr
	if !strings.Contains(hostPort, ":") {
		hostPort = ":" + hostPort
	}
	host, port, err := net.SplitHostPort(hostPort)
	if err != nil {
		return "", false, bad("not a host and port")
	}
	if n, err := strconv.ParseUint(port, 10, 16); err != nil || port != strconv.FormatUint(n, 10) {
		return "", false, bad("the port is not a number from 0 to 65535")
	}
	if host == "" {
		host = "127.0.0.1"
	}
	ip := net.ParseIP(host)
	exposed = host != "localhost" && (ip == nil || !ip.IsLoopback())
	return net.JoinHostPort(host, port), exposed, nil
}

// liveDashboard is a run's --dashboard: the feed the run publishes to and
// the server that shows it.
type liveDashboard struct {
	feed   *study.Feed
	srv    *dashboard.Server
	linger time.Duration
}

// startDashboard serves the run's page when --dashboard asks for it (nil
// when not): its URL goes to stderr once, with a warning when the page is
// served beyond loopback. A failure to listen is the flag's (exit 2).
func startDashboard(a *app, f dashboardFlags) (*liveDashboard, error) {
	addr, exposed, err := f.listenAddr()
	if err != nil || addr == "" {
		return nil, usageError(err)
	}
	feed := study.NewFeed(0)
	redact := func(s string) string { return redactSecrets(engine.RedactURI(s), a.secrets) }
	srv, err := dashboard.Start(addr, feed, redact)
	if err != nil {
		return nil, usageError(fmt.Errorf("--dashboard %s: %w", f.addr, err))
	}
	if exposed {
		fmt.Fprintf(a.stderr, "dbrig: WARNING: --dashboard %s serves the run's page beyond this machine's loopback, to anyone who reaches it: it has no login\n", f.addr)
	}
	fmt.Fprintf(a.stderr, "dbrig: live dashboard at %s\n", srv.URL())
	return &liveDashboard{feed: feed, srv: srv, linger: f.linger}, nil
}

// events is the feed the run publishes to (nil without a dashboard).
func (d *liveDashboard) events() *study.Feed {
	if d == nil {
		return nil
	}
	return d.feed
}

// starting tells the page the run's directory, whose report it links.
func (d *liveDashboard) starting(dir string) {
	if d != nil {
		d.srv.SetRunDir(dir)
	}
}

// stop ends the page once the run has ended, after --dashboard-linger
// unless ctx ends first; nothing of the server outlives it.
func (d *liveDashboard) stop(ctx context.Context, a *app) {
	if d == nil {
		return
	}
	if d.linger > 0 && ctx.Err() == nil {
		fmt.Fprintf(a.stderr, "dbrig: the dashboard stays at %s for %s\n", d.srv.URL(), d.linger)
		select {
		case <-time.After(d.linger):
		case <-ctx.Done():
		}
	}
	d.feed.Close()
	if err := d.srv.Close(); err != nil {
		fmt.Fprintf(a.stderr, "dbrig: dashboard: %v\n", err)
	}
}
