package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/dbrig/dbrig/internal/link"
	"github.com/dbrig/dbrig/internal/units"
)

// linkFlags are dbrig link's flags; the link's own (profile and
// parameters) are link.Flags, as every command with a link has them.
type linkFlags struct {
	listen, upstream      string
	link                  *link.Flags
	statsInterval         time.Duration
	jsonOut, listProfiles bool
}

func newLinkCmd(a *app) *cobra.Command {
	var f linkFlags
	cmd := &cobra.Command{
		Use:   "link --listen ADDR --upstream ADDR [--profile NAME] [flags]",
		Short: "Run the emulated network link as a standalone TCP proxy",
		Long: `link listens on --listen and forwards every connection to --upstream through
an emulated network link: propagation delay each way, serialization at a bit
rate, a TCP window that bounds the bytes in flight, bounded jitter that never
reorders, segment loss recovered after a retransmission timeout, and half or
mismatched duplex. The model is described in docs/link.md.

Start from a profile (see --list-profiles; "base+modifier" combines them, and
"rtt-23ms" is a WAN link of any RTT) and override any of its values with the
flags. With no profile and no flags the link changes nothing and only counts.

It prints one line when it listens, statistics per direction every
--stats-interval on stderr (with --json, one JSON object per line on stdout),
and totals when it stops on SIGINT or SIGTERM.

Exit codes: 0 stopped by a signal, 1 could not listen, 2 bad flags.`,
		Example: `  dbrig link --listen 127.0.0.1:6432 --upstream 127.0.0.1:5432 --profile tukwila-blueridge
  psql -h 127.0.0.1 -p 6432 -U postgres     # every round trip now pays 77 ms

  dbrig link --listen 127.0.0.1:6432 --upstream unix:/var/run/postgresql/.s.PGSQL.5432 \
      --profile tukwila-dublin+legacy-window --json
  dbrig link --listen 127.0.0.1:6432 --upstream db:5432 --rtt 20ms --rate 100mbit --loss 0.1%
  dbrig link --list-profiles`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if f.listProfiles {
				return listProfiles(a.stdout, f.jsonOut)
			}
			cfg, err := f.config()
			if err != nil {
				return usageError(err)
			}
			return runLink(cmd, a, f, cfg)
		},
	}
	fl := cmd.Flags()
	fl.SortFlags = false
	fl.StringVar(&f.listen, "listen", "", "`host:port` to listen on (such as 127.0.0.1:6432; port 0 picks a free one)")
	fl.StringVar(&f.upstream, "upstream", "", "`address` of the server to forward to: host:port, or unix:/path/to/socket")
	f.link = link.AddFlags(fl, "profile", "`name` of the link profile to start from, such as tukwila-blueridge, lan-1g, rtt-23ms, tukwila-dublin+legacy-window (see --list-profiles)")
	f.statsInterval = time.Second
	fl.Var(durationFlag{&f.statsInterval}, "stats-interval", "how often to print statistics (a `duration` such as 1s or 500ms; 0 = only the totals at the end)")
	fl.BoolVar(&f.jsonOut, "json", false, "print JSON objects, one per line, on stdout instead of text")
	fl.BoolVar(&f.listProfiles, "list-profiles", false, "list the link profiles and exit")
	return cmd
}

// config checks the addresses and builds the link's model: the profile,
// then every parameter flag given.
func (f linkFlags) config() (link.Config, error) {
	var errs []error
	if f.listen == "" {
		errs = append(errs, errors.New("--listen is required: the address to listen on, such as 127.0.0.1:6432"))
	} else if err := checkListenAddr(f.listen); err != nil {
		errs = append(errs, err)
	}
	if f.upstream == "" {
		errs = append(errs, errors.New("--upstream is required: the server to forward to, host:port or unix:/path"))
	} else if err := checkUpstreamAddr(f.upstream); err != nil {
		errs = append(errs, err)
	}
	cfg, err := f.link.Config()
	errs = append(errs, err)
	return cfg, errors.Join(errs...)
}

// checkListenAddr refuses a --listen value that is not host:port, before
// anything listens: a missing or malformed port is a usage error (exit 2),
// not a failure to listen.
func checkListenAddr(addr string) error {
	const want = "want host:port, such as 127.0.0.1:6432 (port 0 picks a free one)"
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("--listen %q: %s", addr, want)
	}
	if _, err := net.LookupPort("tcp", port); err != nil || port == "" {
		return fmt.Errorf("--listen %q: port %q is not a port number: %s", addr, port, want)
	}
	return nil
}

// checkUpstreamAddr refuses an --upstream value that could never be
// dialled: neither host:port with a port above 0 nor unix:/path.
func checkUpstreamAddr(addr string) error {
	const want = "want host:port (such as 127.0.0.1:5432) or unix:/path/to/socket (such as unix:/var/run/postgresql/.s.PGSQL.5432)"
	if path, ok := strings.CutPrefix(addr, "unix:"); ok {
		if path == "" {
			return fmt.Errorf("--upstream %q has no socket path: %s", addr, want)
		}
		return nil
	}
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("--upstream %q: %s", addr, want)
	}
	if n, err := net.LookupPort("tcp", port); err != nil || n == 0 {
		return fmt.Errorf("--upstream %q: port %q is not a port from 1 to 65535: %s", addr, port, want)
	}
	return nil
}

// durationFlag is a flag whose value units.ParseDuration reads, so that a
// flag takes the durations a study file takes ("500ms", "1 s", "200µs").
type durationFlag struct{ d *time.Duration }

func (f durationFlag) String() string {
	if f.d == nil {
		return ""
	}
	return units.FormatDuration(*f.d)
}

func (f durationFlag) Set(s string) error {
	d, err := units.ParseDuration(s)
	if err != nil {
		return err
	}
	*f.d = d
	return nil
}

func (durationFlag) Type() string { return "duration" }

// runLink runs the proxy until the command's context ends (SIGINT/SIGTERM).
func runLink(cmd *cobra.Command, a *app, f linkFlags, cfg link.Config) error {
	ctx := cmd.Context()
	report := &upstreamReport{a: a, jsonOut: f.jsonOut, upstream: f.upstream}
	p, err := link.Listen(ctx, f.listen, f.upstream, cfg, link.WithLogger(slog.New(report)))
	if err != nil {
		return failure(err)
	}
	defer p.Close()
	if f.jsonOut {
		writeJSON(a.stdout, map[string]any{"event": "listening", "listen": p.Addr(), "upstream": f.upstream,
			"config": configJSON(cfg)})
	} else {
		desc := cfg.String()
		if !cfg.Impaired() {
			desc = "no impairment"
		}
		fmt.Fprintf(a.stdout, "dbrig link: listening on %s, forwarding to %s through %s\n", p.Addr(), f.upstream, desc)
	}
	var tick <-chan time.Time
	if f.statsInterval > 0 {
		t := time.NewTicker(f.statsInterval)
		defer t.Stop()
		tick = t.C
	}
	prev := p.Stats()
	prevAt := time.Now()
	for {
		select {
		case <-ctx.Done():
			p.Close()
			printTotals(a, f.jsonOut, p.Stats(), time.Now())
			return nil
		case now := <-tick:
			st := p.Stats()
			printInterval(a, f.jsonOut, prev, st, now.Sub(prevAt), now)
			prev, prevAt = st, now
		}
	}
}

func printInterval(a *app, jsonOut bool, prev, st link.Stats, span time.Duration, now time.Time) {
	rate := func(cur, old link.DirStats) units.Rate {
		return units.Rate(float64(cur.Bytes-old.Bytes) * 8 / span.Seconds())
	}
	elapsed := now.Sub(st.Started)
	if jsonOut {
		dir := func(cur, old link.DirStats) map[string]any {
			m := dirJSON(cur)
			m["interval_bps"] = float64(rate(cur, old))
			return m
		}
		writeJSON(a.stdout, map[string]any{"event": "stats", "elapsed_s": elapsed.Seconds(),
			"connections": st.Connections, "active_connections": st.ActiveConnections,
			"forward": dir(st.Forward, prev.Forward), "reverse": dir(st.Reverse, prev.Reverse)})
		return
	}
	dir := func(cur, old link.DirStats) string {
		s := fmt.Sprintf("%s at %s, %d segments", formatBytes(cur.Bytes), formatRate(rate(cur, old)), cur.Segments)
		if cur.LostSegments > 0 {
			s += fmt.Sprintf(", %d lost", cur.LostSegments)
		}
		if cur.WindowStalls > 0 {
			s += fmt.Sprintf(", %d window stalls", cur.WindowStalls)
		}
		return s
	}
	fmt.Fprintf(a.stderr, "%8s  %d conns (%d open)  forward %s  |  reverse %s\n", units.FormatDuration(elapsed.Round(time.Millisecond)),
		st.Connections, st.ActiveConnections, dir(st.Forward, prev.Forward), dir(st.Reverse, prev.Reverse))
}

func printTotals(a *app, jsonOut bool, st link.Stats, now time.Time) {
	elapsed := now.Sub(st.Started)
	if jsonOut {
		writeJSON(a.stdout, map[string]any{"event": "totals", "elapsed_s": elapsed.Seconds(),
			"connections": st.Connections, "forward": dirJSON(st.Forward), "reverse": dirJSON(st.Reverse)})
		return
	}
	fmt.Fprintf(a.stdout, "dbrig link: stopped after %s, %d connections\n", units.FormatDuration(elapsed.Round(time.Millisecond)), st.Connections)
	tw := tabwriter.NewWriter(a.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "direction\tbytes\tsegments\tlost\tthroughput\tmax in flight\twindow stalls\tstall time")
	for _, d := range []struct {
		name string
		s    link.DirStats
	}{{"forward", st.Forward}, {"reverse", st.Reverse}} {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\t%s\t%d\t%s\n", d.name, formatBytes(d.s.Bytes), d.s.Segments, d.s.LostSegments,
			formatRate(d.s.Throughput()), formatBytes(d.s.MaxInFlight), d.s.WindowStalls, units.FormatDuration(d.s.StallTime))
	}
	tw.Flush()
}

// dirJSON is one direction's statistics without the time series.
func dirJSON(s link.DirStats) map[string]any {
	return map[string]any{"bytes": s.Bytes, "segments": s.Segments, "lost_segments": s.LostSegments,
		"throughput_bps": float64(s.Throughput()), "max_in_flight": s.MaxInFlight, "window_stalls": s.WindowStalls,
		"stall_time_s": s.StallTime.Seconds(), "max_jitter_s": s.MaxJitter.Seconds(),
		"mean_lateness_s": s.MeanLateness.Seconds(), "max_lateness_s": s.MaxLateness.Seconds(),
		"spun": latenessJSON(s.Spun), "unspun": latenessJSON(s.Unspun)}
}

func latenessJSON(l link.Lateness) map[string]any {
	return map[string]any{"writes": l.Writes, "mean_lateness_s": l.Mean.Seconds(), "max_lateness_s": l.Max.Seconds()}
}

func configJSON(c link.Config) map[string]any {
	fwd, rev := c.OneWay()
	return map[string]any{"rtt_s": c.EffectiveRTT().Seconds(), "forward_delay_s": fwd.Seconds(), "reverse_delay_s": rev.Seconds(),
		"rate_bps": float64(c.Rate), "window_bytes": int64(c.Window), "jitter_s": c.Jitter.Seconds(), "loss": c.Loss,
		"duplex": c.Duplex.String(), "mss": c.SegmentSize(), "overhead": c.Overhead,
		"min_rto_s": c.MinRTOOrDefault().Seconds(), "seed": c.Seed, "bulk_rate_bps": float64(c.BulkRate())}
}

func writeJSON(w io.Writer, v any) {
	b, _ := json.Marshal(v) // maps of plain values always marshal
	fmt.Fprintf(w, "%s\n", b)
}

// formatRate prints a measured rate; zero is "0bit/s", where a configured
// rate of zero would mean unlimited.
func formatRate(r units.Rate) string {
	if r <= 0 {
		return "0bit/s"
	}
	return r.String() + "/s"
}

// formatBytes prints a byte count in decimal units, as throughputs are.
func formatBytes(n int64) string {
	switch {
	case n >= 1e9:
		return strconv.FormatFloat(float64(n)/1e9, 'f', 2, 64) + " GB"
	case n >= 1e6:
		return strconv.FormatFloat(float64(n)/1e6, 'f', 2, 64) + " MB"
	case n >= 1e3:
		return strconv.FormatFloat(float64(n)/1e3, 'f', 1, 64) + " kB"
	}
	return strconv.FormatInt(n, 10) + " B"
}

// listProfiles prints the built-in profiles: base profiles, then modifiers.
func listProfiles(w io.Writer, jsonOut bool) error {
	ps := link.Profiles()
	if jsonOut {
		out := make([]map[string]any, 0, len(ps))
		for _, p := range ps {
			c := p.Config()
			out = append(out, map[string]any{"name": p.Name, "modifier": p.Modifier, "rtt_s": c.EffectiveRTT().Seconds(),
				"rate_bps": float64(c.Rate), "window_bytes": int64(c.Window), "duplex": c.Duplex.String(),
				"description": p.Description, "source": p.Source})
		}
		b, err := json.MarshalIndent(out, "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(w, "%s\n", b)
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tRTT\tRATE\tWINDOW\tDESCRIPTION")
	for _, p := range ps {
		c := p.Config()
		name, rtt, rate, window := p.Name, "-", "-", "-"
		if p.Modifier {
			name = "+" + name
		}
		if c.RTT > 0 {
			rtt = units.FormatDuration(c.RTT)
		}
		if c.Rate > 0 {
			rate = c.Rate.String()
		}
		if c.Window > 0 {
			window = c.Window.String()
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", name, rtt, rate, window, p.Description)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintln(w, "\n"+strings.TrimSpace(`
Modifiers (+name) change a base profile: --profile tukwila-dublin+legacy-window.
rtt-<duration> (such as rtt-23ms) is a WAN link of that RTT at 1gbit with a 16MiB window.`))
	return err
}

// burstGap is how long the upstream must go without a failed dial before
// the next failure is said again.
const burstGap = time.Second

// upstreamReport says on stderr (and, with --json, on stdout) that the
// upstream could not be reached, once per burst of failures: a client the
// link turns away sees only a reset, and a burst of them one line each
// would drown the statistics.
type upstreamReport struct {
	a        *app
	jsonOut  bool
	upstream string

	mu     sync.Mutex
	last   time.Time // the burst's latest failure
	within int       // failures in the burst after the one said
}

func (u *upstreamReport) Enabled(context.Context, slog.Level) bool { return true }
func (u *upstreamReport) WithAttrs([]slog.Attr) slog.Handler       { return u }
func (u *upstreamReport) WithGroup(string) slog.Handler            { return u }

func (u *upstreamReport) Handle(_ context.Context, r slog.Record) error {
	if r.Message != "link: dial upstream" {
		return nil
	}
	var why string
	r.Attrs(func(at slog.Attr) bool {
		if at.Key == "err" {
			why = at.Value.String()
		}
		return true
	})
	u.mu.Lock()
	defer u.mu.Unlock()
	if !u.last.IsZero() && r.Time.Sub(u.last) < burstGap {
		u.last = r.Time
		u.within++
		return nil
	}
	more := u.within
	u.last, u.within = r.Time, 0
	if u.jsonOut {
		writeJSON(u.a.stdout, map[string]any{"event": "upstream_unreachable", "time": r.Time.Format(time.RFC3339Nano),
			"upstream": u.upstream, "error": why, "earlier_failures_unreported": more})
	}
	line := fmt.Sprintf("dbrig link: cannot reach the upstream %s: %s; the client's connection was reset", u.upstream, why)
	if more > 0 {
		line += fmt.Sprintf(" (and %d more in the previous burst)", more)
	}
	fmt.Fprintln(u.a.stderr, line)
	return nil
}
