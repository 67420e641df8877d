package link

import (
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"slices"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/dbrig/dbrig/internal/benchgoal"
	"github.com/dbrig/dbrig/internal/units"
)

// The link's speed against direct loopback, its peer, measured in the same
// run. Run with
//
//	go test -run '^$' -bench . ./internal/link/
//
// The machine these run on is shared and noisy, so every figure is the
// median of benchRounds alternating rounds (the link first in one round,
// direct loopback first in the next), and each ratio is the median of the
// rounds' ratios: a burst of load elsewhere moves both sides of a round.
// Besides the metrics each benchmark reports, every goal is printed as a
// GOAL line and where its time goes as a WHERE line (internal/benchgoal),
// which `make bench-link` and `make bench` collect into a table.
//
// A bulk transfer's CPU time per KiB (the whole process: sender, link and
// receiver) against direct loopback's is the link's cost, which holds it
// below direct where the CPU is the limit, as on a small, shared machine.

const (
	benchChunk  = 256 << 10
	benchRounds = 7
	// rttSamples is the number of round trips each round times.
	rttSamples = 2000
)

// timedSink reads a connection to its end and answers with the bytes read
// after its first read and the time from its first read to its last: the
// rate the receiver saw, without the connection's start-up and delay.
func timedSink(c net.Conn) {
	buf := make([]byte, benchChunk)
	var first, last time.Time
	var firstN, total int64
	for {
		n, err := c.Read(buf)
		if n > 0 {
			now := time.Now()
			if first.IsZero() {
				first, firstN = now, int64(n)
			}
			last = now
			total += int64(n)
		}
		if err != nil {
			break
		}
	}
	var out [16]byte
	binary.LittleEndian.PutUint64(out[:8], uint64(total-firstN))
	binary.LittleEndian.PutUint64(out[8:], uint64(last.Sub(first)))
	c.Write(out[:])
}

// receivedRate sends total bytes to a timedSink at addr and returns the
// rate its receiver saw, in bytes per second.
func receivedRate(b testing.TB, addr string, total int64) float64 {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	buf := make([]byte, benchChunk)
	for sent := int64(0); sent < total; sent += benchChunk {
		if _, err := c.Write(buf); err != nil {
			b.Fatal(err)
		}
	}
	c.(*net.TCPConn).CloseWrite()
	var out [16]byte
	if _, err := io.ReadFull(c, out[:]); err != nil {
		b.Fatalf("read the sink's figures: %v", err)
	}
	n, span := binary.LittleEndian.Uint64(out[:8]), time.Duration(binary.LittleEndian.Uint64(out[8:]))
	if span <= 0 {
		b.Fatalf("the sink read %d bytes in no time", n)
	}
	return float64(n) / span.Seconds()
}

// transfer is what one bulk transfer measured.
type transfer struct {
	rate      float64 // bytes per second, as its receiver saw them
	cpuPerKiB float64 // the process's CPU time per KiB sent, in ns
}

// measuredTransfer sends total bytes to a timedSink at addr.
func measuredTransfer(b testing.TB, addr string, total int64) transfer {
	start := processCPU(b)
	rate := receivedRate(b, addr, total)
	return transfer{rate: rate, cpuPerKiB: float64(processCPU(b)-start) / float64(total/1024)}
}

// processCPU returns the CPU time (user and system) the process has used.
func processCPU(b testing.TB) time.Duration {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func rates(ts []transfer) []float64 { return each(ts, func(t transfer) float64 { return t.rate }) }
func cpuPerKiB(ts []transfer) []float64 {
	return each(ts, func(t transfer) float64 { return t.cpuPerKiB })
}

func each[T any](v []T, f func(T) float64) []float64 {
	r := make([]float64, len(v))
	for i, x := range v {
		r[i] = f(x)
	}
	return r
}

// printCPUCost prints a WHERE line: the CPU time per KiB of the link's
// transfers against direct loopback's. Both count the sender and the
// receiver; the difference is the link's. Where the CPU is the limit, as on
// a small, shared machine, it is what holds the link below direct.
func printCPUCost(b *testing.B, name string, direct, link []transfer) {
	cost := median(ratios(cpuPerKiB(link), cpuPerKiB(direct)))
	b.ReportMetric(median(cpuPerKiB(direct)), "direct-cpu-ns/KiB")
	b.ReportMetric(median(cpuPerKiB(link)), "link-cpu-ns/KiB")
	b.ReportMetric(cost, "cpu-per-byte-ratio")
	benchgoal.Where(b, name, "CPU time per KiB moved (sender, link and receiver in one process): %.0f ns through the link, %.0f ns direct (%.1fx)",
		median(cpuPerKiB(link)), median(cpuPerKiB(direct)), cost)
}

// roundTrips runs n 64-byte ping-pongs on one connection and returns each
// round trip's time.
func roundTrips(b testing.TB, addr string, n int) []time.Duration {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	buf := make([]byte, 64)
	rtts := make([]time.Duration, 0, n)
	for range n {
		start := time.Now()
		if _, err := c.Write(buf); err != nil {
			b.Fatal(err)
		}
		if _, err := io.ReadFull(c, buf); err != nil {
			b.Fatal(err)
		}
		rtts = append(rtts, time.Since(start))
	}
	return rtts
}

func median[T int64 | float64 | time.Duration](v []T) T {
	v = slices.Clone(v)
	slices.Sort(v)
	return v[len(v)/2]
}

// alternate runs direct and link once per round, in alternating order, and
// returns what each returned, round by round.
func alternate[T any](b *testing.B, rounds int, direct, link func() T) (d, l []T) {
	b.Helper()
	for i := range rounds {
		if i%2 == 0 {
			d, l = append(d, direct()), append(l, link())
		} else {
			l, d = append(l, link()), append(d, direct())
		}
	}
	return d, l
}

func ratios(num, den []float64) []float64 {
	r := make([]float64, len(num))
	for i := range num {
		r[i] = num[i] / den[i]
	}
	return r
}

func mbps(bytesPerSecond float64) string { return fmt.Sprintf("%.0fMB/s", bytesPerSecond/1e6) }

// BenchmarkProxyVsDirect measures direct loopback and the link with no
// impairment in alternating rounds: bulk throughput (64 MiB each round,
// goal at least 0.9 of direct) and the median 64-byte round trip (2000
// each round, goal at most 5 µs added), the latter twice: with the link in
// the benchmark's process, and in a process of its own as in a study.
func BenchmarkProxyVsDirect(b *testing.B) {
	sinkAddr := serveTCP(b, timedSink)
	echoAddr := serveTCP(b, respond(64, 64))
	sinkLink := startLink(b, sinkAddr, Config{}).Addr()
	echoLink := startLink(b, echoAddr, Config{}).Addr()
	echoApart := startLinkApart(b, echoAddr)
	const bulk = 64 << 20
	rounds := max(b.N, benchRounds)
	b.ResetTimer()
	directT, proxiedT := alternate(b, rounds,
		func() transfer { return measuredTransfer(b, sinkAddr, bulk) },
		func() transfer { return measuredTransfer(b, sinkLink, bulk) })
	direct, proxied := rates(directT), rates(proxiedT)
	ratio := median(ratios(proxied, direct))
	b.ReportMetric(median(direct)/1e6, "direct-MB/s")
	b.ReportMetric(median(proxied)/1e6, "proxy-MB/s")
	b.ReportMetric(ratio, "throughput-ratio")
	benchgoal.Print(b, benchgoal.AtLeast("link-unimpaired-throughput", mbps(median(proxied)), mbps(median(direct)), ratio, 0.9))
	inProcess := measureAddedRTT(b, rounds, echoAddr, echoLink)
	b.ReportMetric(us(median(inProcess.direct)), "direct-rtt-median-us")
	b.ReportMetric(us(median(inProcess.via)), "proxy-rtt-median-us")
	b.ReportMetric(us(median(inProcess.added)), "added-rtt-median-us")
	benchgoal.Print(b, inProcess.goal("link-unimpaired-rtt"))
	apart := measureAddedRTT(b, rounds, echoAddr, echoApart)
	b.ReportMetric(us(median(apart.via)), "apart-rtt-median-us")
	b.ReportMetric(us(median(apart.added)), "apart-added-rtt-median-us")
	benchgoal.Print(b, apart.goal("link-unimpaired-rtt-apart"))
	// Last, since the loops stay until the benchmark ends: what of the
	// apart figure is the wake-up of a halted CPU.
	keepCPUsAwake(b)
	awake := measureAddedRTT(b, rounds, echoAddr, echoApart)
	b.ReportMetric(us(median(awake.added)), "apart-awake-added-rtt-median-us")
	printCPUCost(b, "link-unimpaired-throughput", directT, proxiedT)
	benchgoal.Where(b, "link-unimpaired-rtt", "the link adds %.2fx direct's own round trip: each way, a message waits for one more wake-up, read and write, in the link's relay",
		inProcess.addedShare())
	benchgoal.Where(b, "link-unimpaired-rtt-apart", "the same link in a process of its own, as in a study (client and server apart from it): each message wakes that waiting process, %.2fx direct's round trip added; %+.1fus with a lowest-priority busy loop on each CPU, so that no CPU halts while it idles (a halted virtual CPU wakes through the hypervisor: dbrig doctor's cpu.idle)",
		apart.addedShare(), us(median(awake.added)))
}

// addedRTT is the median 64-byte round trip of each round, direct and
// through a link, and what the link added in each.
type addedRTT struct{ direct, via, added []time.Duration }

// measureAddedRTT times round trips to directAddr and through viaAddr in
// alternating rounds.
func measureAddedRTT(b *testing.B, rounds int, directAddr, viaAddr string) addedRTT {
	b.Helper()
	var r addedRTT
	r.direct, r.via = alternate(b, rounds,
		func() time.Duration { return median(roundTrips(b, directAddr, rttSamples)) },
		func() time.Duration { return median(roundTrips(b, viaAddr, rttSamples)) })
	r.added = make([]time.Duration, rounds)
	for i := range r.added {
		r.added[i] = r.via[i] - r.direct[i]
	}
	return r
}

// goal is the round trip's goal: at most 5 µs added to direct's.
func (r addedRTT) goal(name string) benchgoal.Goal {
	added := median(r.added)
	return benchgoal.Goal{Name: name, Ours: fmt.Sprintf("%.1fus", us(median(r.via))),
		Peer: fmt.Sprintf("%.1fus", us(median(r.direct))), Ratio: fmt.Sprintf("%+.1fus", us(added)), Wanted: "<=+5us",
		Met: added <= 5*time.Microsecond}
}

// addedShare is the median of the rounds' added round trip as a share of
// direct's.
func (r addedRTT) addedShare() float64 {
	return median(ratios(durations(r.added), durations(r.direct)))
}

func us(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }

func durations(ds []time.Duration) []float64 {
	return each(ds, func(d time.Duration) float64 { return float64(d) })
}

// BenchmarkImpairedVsDirect measures an impaired link's delivered rate
// against min(its rate, direct loopback) in alternating rounds, at the
// rates up to 10 Gbit/s and past them (infiniband's 40 Gbit/s, and no
// limit with a 1 ms round trip): the goal is at least 0.9 of that at every
// setting, so that a link measures what it names, or the machine's own
// limit where that is lower.
func BenchmarkImpairedVsDirect(b *testing.B) {
	lan := func(rate units.Rate) Config {
		return Config{RTT: 100 * time.Microsecond, Rate: rate, Window: AutotunedWindow}
	}
	infiniband, err := ParseProfile("infiniband")
	if err != nil {
		b.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		cfg  Config
	}{
		{"1gbit", lan(units.Gbit)},
		{"2.5gbit", lan(2500 * units.Mbit)},
		{"5gbit", lan(5 * units.Gbit)},
		{"10gbit", lan(10 * units.Gbit)},
		{"infiniband", infiniband},
		{"unlimited-1ms", Config{RTT: time.Millisecond, Window: AutotunedWindow}},
	} {
		b.Run(tt.name, func(b *testing.B) { benchImpaired(b, tt.name, tt.cfg) })
	}
}

func benchImpaired(b *testing.B, name string, cfg Config) {
	sinkAddr := serveTCP(b, timedSink)
	linkAddr := startLink(b, sinkAddr, cfg).Addr()
	// About a quarter of a second at the set rate, so that the start-up is
	// small beside the transfer.
	size := int64(64 << 20)
	if cfg.Rate > 0 {
		size = min(max(int64(cfg.Rate.BytesPerSecond()/4), 32<<20), 256<<20)
	}
	rounds := max(b.N, benchRounds)
	b.ResetTimer()
	directT, deliveredT := alternate(b, rounds,
		func() transfer { return measuredTransfer(b, sinkAddr, size) },
		func() transfer { return measuredTransfer(b, linkAddr, size) })
	direct, delivered := rates(directT), rates(deliveredT)
	expected := make([]float64, rounds)
	for i, d := range direct {
		expected[i] = d
		if cfg.Rate > 0 {
			expected[i] = min(d, cfg.Rate.BytesPerSecond())
		}
	}
	ratio := median(ratios(delivered, expected))
	b.ReportMetric(median(delivered)/1e6, "delivered-MB/s")
	b.ReportMetric(median(direct)/1e6, "direct-MB/s")
	b.ReportMetric(ratio, "ratio")
	goal := ">=0.90*direct"
	if cfg.Rate > 0 {
		goal = fmt.Sprintf(">=0.90*min(%s,direct)", mbps(cfg.Rate.BytesPerSecond()))
	}
	benchgoal.Print(b, benchgoal.Goal{Name: "link-" + name, Ours: mbps(median(delivered)), Peer: mbps(median(direct)),
		Ratio: fmt.Sprintf("%.2f", ratio), Wanted: goal, Met: ratio >= 0.9})
	printCPUCost(b, "link-"+name, directT, deliveredT)
}
