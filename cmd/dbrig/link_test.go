package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"math"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// lockedBuffer is a bytes.Buffer that a running command writes to while the
// test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// linkRun runs "dbrig ARGS" to completion and returns the exit code, stdout
// and stderr.
func linkRun(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	var out, errb lockedBuffer
	code := run(ctx, args, &app{stdout: &out, stderr: &errb, getenv: func(string) string { return "" }, version: "test"})
	return code, out.String(), errb.String()
}

// freePort returns a loopback address with a port nobody listened on a
// moment ago.
func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// echoServer echoes every connection until the test ends.
func echoServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() {
		ln.Close()
		wg.Wait()
	})
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() {
				defer c.Close()
				io.Copy(c, c)
			})
		}
	})
	return ln.Addr().String()
}

func TestLinkListProfiles(t *testing.T) {
	t.Parallel()
	code, out, errs := linkRun(t, "link", "--list-profiles")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range [][]string{
		{"tukwila-blueridge", "77ms", "1gbit", "16MiB"},
		{"tukwila-dublin", "150ms", "1gbit", "16MiB"},
		{"+legacy-window", "-", "-", "65535B"},
	} {
		found := false
		for _, line := range strings.Split(out, "\n") {
			f := strings.Fields(line)
			if len(f) >= len(want) && f[0] == want[0] && slicesEqual(f[1:len(want)], want[1:]) {
				found = true
			}
		}
		if !found {
			t.Errorf("--list-profiles has no row %v:\n%s", want, out)
		}
	}

	code, out, errs = linkRun(t, "link", "--list-profiles", "--json")
	if code != 0 {
		t.Fatalf("--json: exit %d: %s", code, errs)
	}
	var ps []struct {
		Name     string  `json:"name"`
		Modifier bool    `json:"modifier"`
		RTT      float64 `json:"rtt_s"`
		Rate     float64 `json:"rate_bps"`
		Window   int64   `json:"window_bytes"`
	}
	if err := json.Unmarshal([]byte(out), &ps); err != nil {
		t.Fatalf("--list-profiles --json is not a JSON array: %v\n%s", err, out)
	}
	rtt := map[string]float64{}
	for _, p := range ps {
		rtt[p.Name] = p.RTT
	}
	if rtt["tukwila-blueridge"] != 0.077 || rtt["tukwila-dublin"] != 0.150 {
		t.Errorf("JSON profiles: tukwila-blueridge RTT %vs, tukwila-dublin %vs; want 0.077 and 0.15", rtt["tukwila-blueridge"], rtt["tukwila-dublin"])
	}
}

func slicesEqual(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestLinkBadFlags gives every flag of dbrig link a bad value: each exits
// 2 before anything listens, with a message naming the flag and the form
// it wants.
func TestLinkBadFlags(t *testing.T) {
	t.Parallel()
	base := []string{"link", "--listen", "127.0.0.1:0", "--upstream", "127.0.0.1:1"}
	with := func(extra ...string) []string { return append(slices.Clip(base), extra...) }
	for _, tt := range []struct {
		args []string
		want []string // in the message
	}{
		{[]string{"link", "--upstream", "127.0.0.1:1"}, []string{"--listen", "required"}},
		{[]string{"link", "--listen", "127.0.0.1:0"}, []string{"--upstream", "required"}},
		{[]string{"link", "--listen", "localhost", "--upstream", "127.0.0.1:1"}, []string{"--listen", "host:port", "127.0.0.1:6432"}},
		{[]string{"link", "--listen", "6432", "--upstream", "127.0.0.1:1"}, []string{"--listen", "host:port"}},
		{[]string{"link", "--listen", "127.0.0.1:", "--upstream", "127.0.0.1:1"}, []string{"--listen", "not a port number"}},
		{[]string{"link", "--listen", "127.0.0.1:99999", "--upstream", "127.0.0.1:1"}, []string{"--listen", "not a port number"}},
		{[]string{"link", "--listen", "127.0.0.1:0", "--upstream", "localhost"}, []string{"--upstream", "host:port", "unix:/path"}},
		{[]string{"link", "--listen", "127.0.0.1:0", "--upstream", "127.0.0.1:0"}, []string{"--upstream", "1 to 65535"}},
		{[]string{"link", "--listen", "127.0.0.1:0", "--upstream", "unix:"}, []string{"--upstream", "no socket path"}},
		{with("--rate", "fast"), []string{"--rate", "10 gigabits", "125MB/s"}},
		{with("--rate", "10 gigaflops"), []string{"--rate", `unknown unit "gigaflops"`, "10Gbit/s"}},
		{with("--rate", "100"), []string{"--rate", "no unit", "100mbit"}},
		{with("--rate", "10MB"), []string{"--rate", "add /s for bytes per second"}},
		{with("--rate", "-5mbit"), []string{"--rate", "negative"}},
		{with("--rtt", "77"), []string{"--rtt", "77ms"}},
		{with("--rtt", "-5ms"), []string{"--rtt", "negative"}},
		{with("--rtt", "1000000h"), []string{"--rtt 1000000h", "at most 10s"}},
		{with("--jitter", "1h"), []string{"--jitter 1h", "at most 10s"}},
		{with("--rto", "1h"), []string{"--rto 1h", "at most 2m0s"}},
		{with("--rate", "10bit"), []string{"--rate 10bit", "at least 1kbit"}},
		{with("--rate", "10tbit"), []string{"--rate 10000gbit", "at most 1000gbit"}},
		{with("--window", "2GiB"), []string{"--window 2GiB", "at most 1GiB"}},
		{with("--mss", "0"), []string{"--mss", "536 to 65495"}},
		{with("--profile", "rtt-1000000h"), []string{"--profile", "rtt 1000000h0m0s: at most 10s"}},
		{with("--forward-delay", "far"), []string{"--forward-delay", "77ms"}},
		{with("--reverse-delay", "5 parsecs"), []string{"--reverse-delay", "200us"}},
		{with("--jitter", "lots"), []string{"--jitter", "0.2ms"}},
		{with("--rto", "-1s"), []string{"--rto", "negative"}},
		{with("--window", "big"), []string{"--window", "64KiB"}},
		{with("--window", "64kbit"), []string{"--window", "sizes are bytes"}},
		{with("--window", "1000"), []string{"--window", "smaller than one segment", "--mss"}},
		{with("--loss", "150%"), []string{"--loss", "outside"}},
		{with("--loss", "100%"), []string{"--loss", "below 100%"}},
		{with("--loss", "some"), []string{"--loss", "percentage"}},
		{with("--duplex", "sideways"), []string{"--duplex", "full, half or mismatch"}},
		{with("--mss", "10"), []string{"--mss", "536 to 65495"}},
		{with("--mss", "lots"), []string{"--mss", "1448"}},
		{with("--overhead", "70000"), []string{"--overhead", "0 to 65535"}},
		{with("--overhead", "-1"), []string{"--overhead", "negative"}},
		{with("--profile", "tukwila-mars"), []string{"--profile", "unknown link profile", "--list-profiles"}},
		{with("--profile", "lan-1g+tukwila-dublin"), []string{"--profile", "only modifiers"}},
		{with("--seed", "lucky"), []string{"--seed", "whole number"}},
		{with("--stats-interval", "soon"), []string{"--stats-interval", "1.5s"}},
		{with("--stats-interval", "-1s"), []string{"--stats-interval", "negative"}},
		{with("--json=maybe"), []string{"--json", "invalid argument"}},
		{with("--list-profiles=perhaps"), []string{"--list-profiles", "invalid argument"}},
		{with("--bogus"), []string{"unknown flag", "--bogus"}},
		{with("extra"), []string{"unknown command", "extra"}},
	} {
		code, out, errs := linkRun(t, tt.args...)
		if code != 2 {
			t.Errorf("%v: exit %d, want 2 (stdout %q, stderr %q)", tt.args[1:], code, out, errs)
			continue
		}
		for _, w := range tt.want {
			if !strings.Contains(errs, w) {
				t.Errorf("%v: message %q does not mention %q", tt.args[1:], errs, w)
			}
		}
	}
}

// TestLinkUnitSpellings starts the link with the spellings people write for
// rates, sizes and durations and reads the model it reports back.
func TestLinkUnitSpellings(t *testing.T) {
	t.Parallel()
	up := echoServer(t)
	for _, tt := range []struct {
		flags  []string
		rtt    float64 // seconds
		rate   float64 // bit/s
		window int64
	}{
		{[]string{"--rate", "10 gigabits", "--rtt", "77 ms", "--window", "16 MiB"}, 0.077, 10e9, 16 << 20},
		{[]string{"--rate", "10gbit", "--rtt", "0.2ms", "--window", "64 KB"}, 0.0002, 10e9, 64000},
		{[]string{"--rate", "10Gbit/s", "--rtt", "200µs", "--window", "64KiB"}, 0.0002, 10e9, 65536},
		{[]string{"--rate", "10 Gbps", "--rtt", "200us", "--window", "16 megabytes"}, 0.0002, 10e9, 16e6},
		{[]string{"--rate", "10gigabit", "--rtt", "77ms"}, 0.077, 10e9, 0},
		{[]string{"--rate", "1g", "--rtt", "1 s"}, 1, 1e9, 0},
		{[]string{"--rate", "100 Mbps"}, 0, 100e6, 0},
		{[]string{"--rate", "1.5Mbit/s"}, 0, 1.5e6, 0},
		{[]string{"--rate", "10GbE"}, 0, 10e9, 0},
		{[]string{"--rate", "125 MB/s"}, 0, 1e9, 0}, // bytes per second
	} {
		t.Run(strings.Join(tt.flags, " "), func(t *testing.T) {
			_, out, errs, stop := startLinkCmd(t, append([]string{"--upstream", up, "--json", "--stats-interval", "0"}, tt.flags...)...)
			if code := stop(); code != 0 {
				t.Fatalf("exit %d: %s", code, errs.String())
			}
			var ev struct {
				Config struct {
					RTT    float64 `json:"rtt_s"`
					Rate   float64 `json:"rate_bps"`
					Window int64   `json:"window_bytes"`
				} `json:"config"`
			}
			line, _, _ := strings.Cut(out.String(), "\n")
			if err := json.Unmarshal([]byte(line), &ev); err != nil {
				t.Fatalf("listening line: %v: %q", err, line)
			}
			if c := ev.Config; math.Abs(c.RTT-tt.rtt) > 1e-9 || math.Abs(c.Rate-tt.rate) > 1e-3 || c.Window != tt.window {
				t.Errorf("config %+v, want rtt %vs, rate %v bit/s, window %d", c, tt.rtt, tt.rate, tt.window)
			}
		})
	}
}

func TestLinkListenFailure(t *testing.T) {
	t.Parallel()
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	code, _, errs := linkRun(t, "link", "--listen", taken.Addr().String(), "--upstream", "127.0.0.1:1")
	if code != 1 || !strings.Contains(errs, taken.Addr().String()) {
		t.Errorf("listen on a port in use: exit %d, %q; want 1 and a message naming %s", code, errs, taken.Addr())
	}
}

// startLinkCmd runs "dbrig link ARGS --listen <free port>" in the
// background until stop is called, which returns the exit code.
func startLinkCmd(t *testing.T, args ...string) (addr string, out, errs *lockedBuffer, stop func() int) {
	t.Helper()
	addr = freePort(t)
	ctx, cancel := context.WithCancel(t.Context())
	out, errs = &lockedBuffer{}, &lockedBuffer{}
	codes := make(chan int, 1)
	go func() {
		codes <- run(ctx, append([]string{"link", "--listen", addr}, args...),
			&app{stdout: out, stderr: errs, getenv: func(string) string { return "" }, version: "test"})
	}()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(out.String(), "listening") {
		select {
		case code := <-codes:
			cancel()
			t.Fatalf("dbrig link %v exited with %d before listening: %s", args, code, errs.String())
		default:
		}
		if time.Now().After(deadline) {
			cancel()
			t.Fatalf("dbrig link %v did not listen within 10s: %s", args, errs.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
	stopped := false
	stop = func() int {
		stopped = true
		cancel()
		select {
		case code := <-codes:
			return code
		case <-time.After(10 * time.Second):
			t.Fatalf("dbrig link did not stop within 10s of its context ending")
			return -1
		}
	}
	t.Cleanup(func() {
		if !stopped {
			stop()
		}
	})
	return addr, out, errs, stop
}

// exchange sends msg through addr n times and returns the fastest echo: a
// busy machine only adds lateness to the link's delay, so the fastest of a
// few is the one to set against the link's RTT.
func exchange(t *testing.T, addr string, msg []byte, n int) time.Duration {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatalf("dial the link: %v", err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	buf := make([]byte, len(msg))
	fastest := time.Duration(math.MaxInt64)
	for range n {
		start := time.Now()
		if _, err := c.Write(msg); err != nil {
			t.Fatalf("write through the link: %v", err)
		}
		if _, err := io.ReadFull(c, buf); err != nil {
			t.Fatalf("read through the link: %v", err)
		}
		if !bytes.Equal(buf, msg) {
			t.Fatalf("echo through the link changed the data")
		}
		fastest = min(fastest, time.Since(start))
	}
	return fastest
}

func TestLinkRunsJSON(t *testing.T) {
	t.Parallel()
	up := echoServer(t)
	addr, out, _, stop := startLinkCmd(t, "--upstream", up, "--profile", "rtt-10ms", "--stats-interval", "50ms", "--json")
	msg := bytes.Repeat([]byte("dbrig"), 200)
	if rtt := exchange(t, addr, msg, 3); rtt < 10*time.Millisecond || rtt > 50*time.Millisecond {
		t.Errorf("an exchange through rtt-10ms took %v, want about 10ms", rtt)
	}
	time.Sleep(120 * time.Millisecond) // at least one stats line
	if code := stop(); code != 0 {
		t.Errorf("stopped by its context: exit %d, want 0", code)
	}
	type lateness struct {
		Writes int64   `json:"writes"`
		Mean   float64 `json:"mean_lateness_s"`
	}
	type dir struct {
		Bytes    int64    `json:"bytes"`
		Segments int64    `json:"segments"`
		Interval float64  `json:"interval_bps"`
		Spun     lateness `json:"spun"`
		Unspun   lateness `json:"unspun"`
	}
	type event struct {
		Event    string `json:"event"`
		Listen   string `json:"listen"`
		Upstream string `json:"upstream"`
		Config   struct {
			RTT    float64 `json:"rtt_s"`
			Rate   float64 `json:"rate_bps"`
			Window int64   `json:"window_bytes"`
		} `json:"config"`
		Forward, Reverse dir
	}
	var events []event
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var ev event
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("stdout line is not JSON: %v: %q", err, line)
		}
		events = append(events, ev)
	}
	if len(events) < 3 || events[0].Event != "listening" || events[len(events)-1].Event != "totals" {
		t.Fatalf("want a listening event, stats events and totals; got %d lines:\n%s", len(events), out.String())
	}
	first, last := events[0], events[len(events)-1]
	if first.Listen != addr || first.Upstream != up || first.Config.RTT != 0.01 || first.Config.Rate != 1e9 || first.Config.Window != 16<<20 {
		t.Errorf("listening event %+v, want %s -> %s with rtt 10ms, 1gbit, 16MiB", first, addr, up)
	}
	if want := int64(3 * len(msg)); last.Forward.Bytes != want || last.Reverse.Bytes != want {
		t.Errorf("totals: %d bytes forward, %d reverse; want %d each", last.Forward.Bytes, last.Reverse.Bytes, want)
	}
	for name, d := range map[string]dir{"forward": last.Forward, "reverse": last.Reverse} {
		if d.Spun.Writes+d.Unspun.Writes == 0 {
			t.Errorf("totals %s: no writes split into spun and unspun (%+v, %+v)", name, d.Spun, d.Unspun)
		}
	}
	stats := 0
	for _, ev := range events {
		if ev.Event == "stats" {
			stats++
		}
	}
	if stats == 0 {
		t.Errorf("no stats event in 120 ms at --stats-interval 50ms")
	}
}

func TestLinkRunsText(t *testing.T) {
	t.Parallel()
	up := echoServer(t)
	addr, out, errs, stop := startLinkCmd(t, "--upstream", up, "--rtt", "4ms", "--rate", "100mbit", "--stats-interval", "30ms")
	exchange(t, addr, []byte("hello"), 2)
	time.Sleep(80 * time.Millisecond)
	if code := stop(); code != 0 {
		t.Errorf("exit %d, want 0", code)
	}
	o := out.String()
	for _, want := range []string{"listening on " + addr, up, "rtt 4ms", "rate 100mbit", "forward", "reverse", "throughput"} {
		if !strings.Contains(o, want) {
			t.Errorf("stdout lacks %q:\n%s", want, o)
		}
	}
	if e := errs.String(); !strings.Contains(e, "forward 10 B") {
		t.Errorf("stderr has no stats line with the 10 bytes sent:\n%s", e)
	}
}

func TestLinkFlagsOverrideProfile(t *testing.T) {
	t.Parallel()
	up := echoServer(t)
	// The profile's 150 ms RTT is overridden to 6 ms; its 16 MiB window to
	// 1000 bytes, which a 536-byte MSS allows.
	addr, out, _, stop := startLinkCmd(t, "--upstream", up, "--profile", "tukwila-dublin", "--rtt", "6ms",
		"--window", "1000", "--mss", "536", "--json", "--stats-interval", "0")
	if rtt := exchange(t, addr, []byte("x"), 5); rtt < 6*time.Millisecond || rtt > 100*time.Millisecond {
		t.Errorf("exchange took %v, want about 6ms (the flag), not 150ms (the profile)", rtt)
	}
	stop()
	var ev struct {
		Config struct {
			RTT    float64 `json:"rtt_s"`
			Rate   float64 `json:"rate_bps"`
			Window int64   `json:"window_bytes"`
			MSS    int     `json:"mss"`
		} `json:"config"`
	}
	line, _, _ := strings.Cut(out.String(), "\n")
	if err := json.Unmarshal([]byte(line), &ev); err != nil {
		t.Fatalf("listening line: %v: %q", err, line)
	}
	if c := ev.Config; c.RTT != 0.006 || c.Rate != 1e9 || c.Window != 1000 || c.MSS != 536 {
		t.Errorf("config %+v, want rtt 6ms from the flag, rate 1gbit from the profile, window 1000 and mss 536", c)
	}
}

// TestLinkSaysTheUpstreamIsDown: clients the link turns away because its
// upstream refuses see only a reset; the link says why on stderr and in
// --json, once for a burst of such clients.
func TestLinkSaysTheUpstreamIsDown(t *testing.T) {
	t.Parallel()
	down := freePort(t) // nothing listens there
	addr, out, errs, stop := startLinkCmd(t, "--upstream", down, "--json", "--stats-interval", "0")
	first := time.Now()
	const clients = 5
	for range clients {
		c, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			continue // reset before the handshake finished
		}
		c.SetDeadline(time.Now().Add(10 * time.Second))
		if _, err := c.Read(make([]byte, 1)); err == nil {
			t.Errorf("a client of a link whose upstream is down read data")
		}
		c.Close()
	}
	burst := time.Since(first)
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(errs.String(), "cannot reach the upstream") && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if code := stop(); code != 0 {
		t.Fatalf("exit %d: %s", code, errs.String())
	}
	said := strings.Count(errs.String(), "dbrig link: cannot reach the upstream "+down)
	if said == 0 || !strings.Contains(out.String(), `"event":"upstream_unreachable"`) {
		t.Fatalf("the link did not say its upstream was down;\nstderr: %s\nstdout: %s", errs.String(), out.String())
	}
	// The clients came back to back: one burst, said once, unless the
	// machine spread them further apart than a burst's gap.
	if burst < burstGap && said != 1 {
		t.Errorf("said %d times for %d clients in %s, want once per burst:\n%s", said, clients, burst, errs.String())
	}
}
