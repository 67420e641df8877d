package link

import (
	"fmt"
	"io"
	"net"
	"os"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// A server streaming small messages (PostgreSQL's notices, a row per
// write) through the link, against the same through an unimpaired link
// and direct loopback. Run with
//
//	go test -run '^$' -bench SmallMessages -v ./internal/link/
//
// The writer is a process of its own, as a server is: the link's CPU then
// competes with it for the machine's cores, which is how a link that
// spends much CPU per message slows the stream it carries.

// smallWriterEnv holds "count size pace" for the writer's process.
const smallWriterEnv = "DBRIG_LINK_SMALL_WRITER"

// TestSmallWriterProcess is the body of the writer's process, not a test:
// each connection to it gets count messages of size bytes, each its own
// write, pace apart (0: as fast as it can), and then the end of the
// stream. It serves until its standard input closes.
func TestSmallWriterProcess(t *testing.T) {
	spec := os.Getenv(smallWriterEnv)
	if spec == "" {
		t.Skip("the body of the writer's process in BenchmarkSmallMessages")
	}
	var count, size int
	var pace time.Duration
	if _, err := fmt.Sscan(spec, &count, &size, &pace); err != nil {
		t.Fatalf("%s=%q: %v", smallWriterEnv, spec, err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		io.Copy(io.Discard, os.Stdin)
		ln.Close()
	}()
	fmt.Println("writer", ln.Addr())
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		writeSmall(c, count, size, pace)
		c.Close()
	}
}

func writeSmall(c net.Conn, count, size int, pace time.Duration) {
	msg := make([]byte, size)
	ts := unix.NsecToTimespec(int64(pace))
	for i := range count {
		if i > 0 && pace > 0 {
			unix.Nanosleep(&ts, nil)
		}
		if _, err := c.Write(msg); err != nil {
			return
		}
	}
}

// startSmallWriter starts the writer's process; it ends with the benchmark.
func startSmallWriter(b *testing.B, count, size int, pace time.Duration) string {
	b.Helper()
	return startTestProcess(b, "TestSmallWriterProcess", fmt.Sprintf("%s=%d %d %s", smallWriterEnv, count, size, pace), "writer")
}

// smallStream is what one stream's reader saw.
type smallStream struct {
	perMessage time.Duration // from the first byte to the last, a message
	cpu        time.Duration // this process's CPU over it (the link and the reader), a message
	series     []int64       // bytes read in each 10 ms
}

// readSmallStream reads one stream of total bytes from addr.
func readSmallStream(b testing.TB, addr string, total, messages int) smallStream {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	buf := make([]byte, 8<<10)
	var first time.Time
	var cpu0 time.Duration
	var series []int64
	for got := 0; got < total; {
		n, err := c.Read(buf)
		if n > 0 && first.IsZero() {
			first, cpu0 = time.Now(), processCPU(b)
		}
		if n > 0 {
			i := int(time.Since(first) / (10 * time.Millisecond))
			for len(series) <= i {
				series = append(series, 0)
			}
			series[i] += int64(n)
			got += n
		}
		if err != nil {
			b.Fatalf("read the stream after %d of %d bytes: %v", got, total, err)
		}
	}
	return smallStream{perMessage: time.Since(first) / time.Duration(messages),
		cpu: (processCPU(b) - cpu0) / time.Duration(messages), series: series}
}

// BenchmarkSmallMessages streams 124-byte messages (a notice's size) as
// fast as the writer can and paced 100 µs apart, direct and through the
// unimpaired link, infiniband and lan-1g, in alternating rounds, and
// reports each path's median time and CPU a message; with -v each round's
// bytes per 10 ms.
func BenchmarkSmallMessages(b *testing.B) {
	const size = 124
	for _, tt := range []struct {
		name     string
		messages int
		pace     time.Duration
	}{
		{"flat-out", 100_000, 0},
		{"every-100us", 10_000, 100 * time.Microsecond},
	} {
		b.Run(tt.name, func(b *testing.B) {
			writer := startSmallWriter(b, tt.messages, size, tt.pace)
			paths := []string{"direct", "loopback", "infiniband", "lan-1g"}
			addrs := map[string]string{"direct": writer}
			links := map[string]*Proxy{}
			for _, name := range paths[1:] {
				cfg, err := ParseProfile(name)
				if err != nil {
					b.Fatal(err)
				}
				links[name] = startLink(b, writer, cfg)
				addrs[name] = links[name].Addr()
			}
			b.ResetTimer()
			seen := map[string][]smallStream{}
			for round := range max(b.N, benchRounds) {
				for i := range paths {
					name := paths[(i+round)%len(paths)]
					var before DirStats
					if p := links[name]; p != nil {
						before = p.Stats().Reverse
					}
					s := readSmallStream(b, addrs[name], tt.messages*size, tt.messages)
					seen[name] = append(seen[name], s)
					var writes string
					if p := links[name]; p != nil {
						after := p.Stats().Reverse
						writes = fmt.Sprintf(", the link's writes a message %.2f (spun for %.2f)",
							float64(after.Spun.Writes+after.Unspun.Writes-before.Spun.Writes-before.Unspun.Writes)/float64(tt.messages),
							float64(after.Spun.Writes-before.Spun.Writes)/float64(tt.messages))
					}
					b.Logf("%s round %d: %.2f us a message, CPU %.2f us a message%s; KB per 10 ms %v",
						name, round, us(s.perMessage), us(s.cpu), writes, kilobytes(s.series))
				}
			}
			for _, name := range paths {
				ss := seen[name]
				b.ReportMetric(median(each(ss, func(s smallStream) float64 { return float64(s.perMessage) })), name+"-ns/msg")
				b.ReportMetric(median(each(ss, func(s smallStream) float64 { return float64(s.cpu) })), name+"-cpu-ns/msg")
			}
		})
	}
}

func kilobytes(series []int64) []int64 {
	kb := make([]int64, len(series))
	for i, v := range series {
		kb[i] = v / 1000
	}
	return kb
}
