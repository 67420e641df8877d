package link

import (
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dbrig/dbrig/internal/units"
)

// The hash keeps a connection on one member and spreads connections over
// all of them: of 1,000 consecutive source ports, each of two members gets
// close to half.
func TestMemberOfSpreadsSourcePorts(t *testing.T) {
	t.Parallel()
	dst := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 40000}
	for _, members := range []int{2, 4} {
		counts := make([]int, members)
		for port := 32768; port < 33768; port++ {
			src := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: port}
			m := memberOf(src, dst, members)
			if again := memberOf(src, dst, members); again != m {
				t.Fatalf("port %d: member %d, then %d", port, m, again)
			}
			counts[m]++
		}
		for m, n := range counts {
			if share := float64(n) / 1000; share < 0.8/float64(members) || share > 1.2/float64(members) {
				t.Errorf("%d members: member %d carries %d of 1000 ports, want about %d", members, m, n, 1000/members)
			}
		}
	}
	if m := memberOf(memAddr{}, memAddr{}, 2); m != 0 {
		t.Errorf("a pipe rides member %d, want 0", m)
	}
}

// bondMember is the member the proxy binds a client's connection to, as
// the client sees its two ends.
func bondMember(c net.Conn, members int) int { return memberOf(c.LocalAddr(), c.RemoteAddr(), members) }

// sendAll writes n bytes on every connection at once and returns the rate
// of the whole transfer: every byte, from the first write until the server
// counted the last. A busy machine only lengthens it, so it can only be
// slower than the link allows, never faster.
func sendAll(t *testing.T, conns []*net.TCPConn, n int, received *atomic.Int64, done <-chan struct{}) units.Rate {
	t.Helper()
	start := time.Now()
	var wg sync.WaitGroup
	for _, c := range conns {
		wg.Go(func() {
			if _, err := c.Write(make([]byte, n)); err != nil {
				t.Errorf("write %d bytes: %v", n, err)
			}
			c.CloseWrite()
		})
	}
	wg.Wait()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatalf("%d of %d bytes arrived in 30s", received.Load(), n*len(conns))
	}
	return units.Rate(float64(n*len(conns)) * 8 / time.Since(start).Seconds())
}

// A bond of two 50 Mbit/s members (slow enough for a shared 2-core
// machine): one connection rides one member and carries no more than it,
// while two connections on different members carry more than one member
// could (seed 004: "limited to a performance equivalent to a single port
// at 1Gbps for each TCP connection"). The client dials until it holds two
// connections the hash puts on different members; each dial takes a new
// ephemeral source port, so that takes two dials on average.
func TestFidelityBond(t *testing.T) {
	const member = 50 * units.Mbit
	cfg := Config{RTT: time.Millisecond, Rate: member, Window: AutotunedWindow, Members: 2}
	n := int(member.BytesPerSecond() * 0.6)
	for _, tt := range []struct {
		name      string
		conns     int
		least     float64 // of one member's rate; 0 = no lower bound
		most      float64 // of one member's rate
		different bool    // the connections ride different members
	}{
		{name: "one connection", conns: 1, most: 1.1},
		{name: "two connections on two members", conns: 2, least: 1.3, most: 2.1, different: true},
	} {
		var received atomic.Int64
		done := make(chan struct{})
		var finished atomic.Int64
		up := serveTCP(t, func(c net.Conn) {
			buf := make([]byte, 64<<10)
			got := 0
			for {
				k, err := c.Read(buf)
				got += k
				received.Add(int64(k))
				if err != nil {
					break
				}
			}
			if got == n && finished.Add(1) == int64(tt.conns) {
				close(done)
			}
		})
		p := startLink(t, up, cfg)
		conns := dialMembers(t, p.Addr(), tt.conns, cfg.Members)
		got := sendAll(t, conns, n, &received, done)
		ratio := float64(got) / float64(member)
		t.Logf("%s: %s, %.3f of one member's %s", tt.name, got, ratio, member)
		if ratio > tt.most {
			t.Errorf("%s: %s, more than %.1fx one member's %s", tt.name, got, tt.most, member)
		}
		if tt.least > 0 && ratio < tt.least {
			t.Errorf("%s: %s, want more than %.1fx one member's %s: the members do not carry at once", tt.name, got, tt.least, member)
		}
	}
}

// dialMembers dials addr until it holds k connections on k different
// members, closing the ones that land on a member already held.
func dialMembers(t *testing.T, addr string, k, members int) []*net.TCPConn {
	t.Helper()
	var conns []*net.TCPConn
	held := map[int]bool{}
	for tries := 0; len(conns) < k; tries++ {
		if tries == 64 {
			t.Fatalf("64 dials landed on members %v only", held)
		}
		c := dial(t, addr)
		if m := bondMember(c, members); !held[m] {
			held[m] = true
			conns = append(conns, c)
			continue
		}
		c.Close()
	}
	return conns
}
