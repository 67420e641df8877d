package link

import (
	"io"
	"net"
	"slices"
	"testing"
	"time"
)

// Speed of the proxy against direct loopback. Run with
//
//	go test -run '^$' -bench . -benchtime 3s ./internal/link/
//
// BenchmarkProxyVsDirect measures both in one run and reports the ratios.

const benchChunk = 256 << 10

// sink discards everything and closes when the sender closes.
func sink(c net.Conn) { io.Copy(io.Discard, c) }

// sendBulk sends total bytes over a new connection to addr and waits until
// the server has read them all (it closes after EOF).
func sendBulk(b testing.TB, addr string, total int64) time.Duration {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	buf := make([]byte, benchChunk)
	start := time.Now()
	for sent := int64(0); sent < total; sent += benchChunk {
		if _, err := c.Write(buf); err != nil {
			b.Fatal(err)
		}
	}
	c.(*net.TCPConn).CloseWrite()
	io.Copy(io.Discard, c) // the server closes once it has read everything
	return time.Since(start)
}

func benchForward(b *testing.B, addr string) {
	total := int64(b.N) * benchChunk
	b.SetBytes(benchChunk)
	b.ResetTimer()
	sendBulk(b, addr, total)
}

func BenchmarkForwardDirect(b *testing.B) {
	benchForward(b, serveTCP(b, sink))
}

func BenchmarkForwardProxy(b *testing.B) {
	benchForward(b, startLink(b, serveTCP(b, sink), Config{}).Addr())
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

func median(d []time.Duration) time.Duration {
	d = slices.Clone(d)
	slices.Sort(d)
	return d[len(d)/2]
}

func benchRoundTrip(b *testing.B, addr string) {
	b.ResetTimer()
	rtts := roundTrips(b, addr, b.N)
	b.ReportMetric(float64(median(rtts).Nanoseconds())/1e3, "median-us")
}

func BenchmarkRoundTripDirect(b *testing.B) {
	benchRoundTrip(b, serveTCP(b, respond(64, 64)))
}

func BenchmarkRoundTripProxy(b *testing.B) {
	benchRoundTrip(b, startLink(b, serveTCP(b, respond(64, 64)), Config{}).Addr())
}

// BenchmarkProxyVsDirect measures direct loopback and the proxy with no
// impairment in the same run, interleaved so that both see the same machine,
// and reports throughput-ratio (proxy/direct) and the median round trip the
// proxy adds. Each iteration moves 64 MiB each way and 2000 round trips each
// way.
func BenchmarkProxyVsDirect(b *testing.B) {
	sinkAddr := serveTCP(b, sink)
	echoAddr := serveTCP(b, respond(64, 64))
	sinkProxy := startLink(b, sinkAddr, Config{}).Addr()
	echoProxy := startLink(b, echoAddr, Config{}).Addr()
	const bulk = 64 << 20
	var direct, proxied time.Duration
	var rttDirect, rttProxy []time.Duration
	for range b.N {
		direct += sendBulk(b, sinkAddr, bulk)
		proxied += sendBulk(b, sinkProxy, bulk)
		rttDirect = append(rttDirect, roundTrips(b, echoAddr, 2000)...)
		rttProxy = append(rttProxy, roundTrips(b, echoProxy, 2000)...)
	}
	mbps := func(d time.Duration) float64 { return float64(b.N) * bulk / d.Seconds() / 1e6 }
	b.ReportMetric(mbps(direct), "direct-MB/s")
	b.ReportMetric(mbps(proxied), "proxy-MB/s")
	b.ReportMetric(float64(direct)/float64(proxied), "throughput-ratio")
	b.ReportMetric(float64(median(rttDirect).Nanoseconds())/1e3, "direct-rtt-median-us")
	b.ReportMetric(float64(median(rttProxy).Nanoseconds())/1e3, "proxy-rtt-median-us")
	b.ReportMetric(float64((median(rttProxy)-median(rttDirect)).Nanoseconds())/1e3, "added-rtt-median-us")
}

// BenchmarkForwardModel is bulk throughput through the model (no rate
// limit, 1 ms RTT, a 16 MiB window): the fastest link the proxy can emulate
// on this machine. Profiles faster than this (lan-10g, infiniband) are
// limited by the CPU here, not by their rate.
func BenchmarkForwardModel(b *testing.B) {
	benchForward(b, startLink(b, serveTCP(b, sink), Config{RTT: time.Millisecond, Window: AutotunedWindow}).Addr())
}
