package link

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/dbrig/dbrig/internal/units"
)

// Duplex is how the two directions of a link share the medium.
type Duplex int

const (
	// FullDuplex: each direction has a medium of its own.
	FullDuplex Duplex = iota
	// HalfDuplex: both directions share one medium; a frame waits while the
	// other direction transmits.
	HalfDuplex
	// Mismatch: one end runs half duplex, the other full. The full-duplex end
	// transmits whenever it likes; frames that overlap in time with a frame
	// of the other direction collide late and are lost on the half-duplex
	// side, then recovered after a retransmission timeout.
	Mismatch
)

func (d Duplex) String() string {
	switch d {
	case HalfDuplex:
		return "half"
	case Mismatch:
		return "mismatch"
	}
	return "full"
}

// ParseDuplex reads "full", "half" or "mismatch".
func ParseDuplex(s string) (Duplex, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "full", "":
		return FullDuplex, nil
	case "half":
		return HalfDuplex, nil
	case "mismatch":
		return Mismatch, nil
	}
	return 0, fmt.Errorf("duplex %q: want full, half or mismatch", s)
}

// Defaults of the model.
const (
	DefaultMSS = 1448                   // Ethernet MTU 1500 minus IP, TCP and timestamp headers
	MinRTO     = 200 * time.Millisecond // Linux's minimum retransmission timeout
	// LegacyWindow is the largest window without window scaling (RFC 1323):
	// Windows Server 2003's receive window in seed 000.
	LegacyWindow = 65535
	// LegacySendBuffer is the default Winsock send buffer of Windows Server
	// 2003 in seed 000 ("the default Winsock buffer size is 8 KB").
	LegacySendBuffer = 8 << 10
	// AutotunedWindow is a receive window that autotuning grows to (Windows
	// Server 2008, Linux with large tcp_rmem), seed 000.
	AutotunedWindow = 16 << 20
)

// Config is the physical model of one emulated link. The zero value is a
// link with no impairment at all (it still segments at the default MSS).
//
// "Forward" is the direction from the client (the side that connects) to the
// upstream server; "Reverse" is the way back.
type Config struct {
	// RTT is the round-trip propagation delay. Each direction is delayed by
	// RTT/2 unless ForwardDelay or ReverseDelay is set.
	RTT time.Duration
	// ForwardDelay and ReverseDelay override the one-way delays when non-zero.
	ForwardDelay, ReverseDelay time.Duration
	// Jitter bounds a random extra delay in [0, Jitter] per segment; byte
	// order is always kept, so the delay actually produced can be smaller.
	Jitter time.Duration
	// Rate is the serialization rate in bits per second (0 = unlimited).
	Rate units.Rate
	// Window is the most bytes in flight per direction of one connection
	// (0 = unlimited).
	Window units.Size
	// SendBuffer is the most bytes the sending application may have
	// unacknowledged per direction (0 = unlimited): an old stack's fixed
	// send buffer holds bytes until they are acknowledged, so it bounds
	// what is in flight as a window does (seed 000: Windows Server 2003's
	// 8 KB Winsock buffer).
	SendBuffer units.Size
	// Loss is the probability that a segment is lost; recovery is modelled
	// as a stall of one retransmission timeout.
	Loss float64
	// Duplex selects full, half or mismatched duplex.
	Duplex Duplex
	// MSS is the segment size (0 = DefaultMSS).
	MSS int
	// Overhead is the number of header bytes each segment adds on the wire
	// for serialization (0 = payload only).
	Overhead int
	// RTO is the minimum retransmission timeout (0 = MinRTO).
	RTO time.Duration
	// Seed makes jitter and loss reproducible (0 = random).
	Seed int64
	// Members is the number of links bonded into one (0 = 1): each has a
	// medium of its own at Rate, and each connection rides one of them,
	// chosen by a hash of its ports (802.3ad's layer3+4 policy), so one
	// connection never goes faster than one member (seed 004: "limited to
	// a performance equivalent to a single port at 1Gbps for each TCP
	// connection").
	Members int
}

// MemberCount returns the number of bonded members in use.
func (c Config) MemberCount() int { return max(c.Members, 1) }

// OneWay returns the forward and reverse one-way delays.
func (c Config) OneWay() (forward, reverse time.Duration) {
	forward, reverse = c.RTT/2, c.RTT-c.RTT/2
	if c.ForwardDelay > 0 {
		forward = c.ForwardDelay
	}
	if c.ReverseDelay > 0 {
		reverse = c.ReverseDelay
	}
	return forward, reverse
}

// EffectiveRTT is the sum of both one-way delays.
func (c Config) EffectiveRTT() time.Duration {
	f, r := c.OneWay()
	return f + r
}

// SegmentSize returns the MSS in use.
func (c Config) SegmentSize() int {
	if c.MSS <= 0 {
		return DefaultMSS
	}
	return c.MSS
}

// MinRTOOrDefault returns the minimum retransmission timeout in use.
func (c Config) MinRTOOrDefault() time.Duration {
	if c.RTO <= 0 {
		return MinRTO
	}
	return c.RTO
}

// CountsShadowCollisions reports whether a link with c counts its shadow
// collisions (Stats' ShadowCollisions): full duplex with a rate, where a
// frame has an airtime for another to overlap.
func (c Config) CountsShadowCollisions() bool { return c.Duplex == FullDuplex && c.Rate > 0 }

// Impaired reports whether the link changes anything at all.
func (c Config) Impaired() bool {
	return c.RTT > 0 || c.ForwardDelay > 0 || c.ReverseDelay > 0 || c.Jitter > 0 ||
		c.Rate > 0 || c.Window > 0 || c.SendBuffer > 0 || c.Loss > 0 || c.Duplex != FullDuplex
}

// Bounds of the model's settings. Beyond them a value is a typo, and some
// would stall a connection for longer than any run (rtt = "1000000h"
// once hung a study).
const (
	// MaxRTT bounds the round trip and each one-way delay and the jitter:
	// the Moon is 2.6 s away and back, so a WAN of more than 10 s is a typo.
	MaxRTT = 10 * time.Second
	// MinMSS is the segment every IPv4 host must accept (RFC 1122: a
	// 576-byte datagram less 40 bytes of IP and TCP headers).
	MinMSS = 536
	// MaxMSS is the largest IPv4 datagram, 65,535 bytes, less 40 bytes of
	// IP and TCP headers.
	MaxMSS = 65495
	// MaxWindow is TCP's largest window with window scaling (RFC 7323:
	// 2^30 bytes).
	MaxWindow = units.GiB
	// MinRate is the slowest serialization: at 1 kbit/s one full segment
	// already takes 11.6 s, longer than MaxRTT.
	MinRate = units.Kbit
	// MaxRate is 1 Tbit/s, above the fastest Ethernet (800 Gbit/s).
	MaxRate = 1000 * units.Gbit
	// MaxRTO is Linux's largest retransmission timeout (TCP_RTO_MAX).
	MaxRTO = 120 * time.Second
	// MaxMembers is 802.1AX's (802.3ad's) most active members of one
	// aggregation.
	MaxMembers = 8
	// MaxOverhead bounds the header bytes counted per segment: no header
	// is longer than a whole IPv4 datagram.
	MaxOverhead = 65535
)

// Validate reports every problem with the configuration at once, each
// naming the setting, its value and its bound (the bounds of [Params]).
func (c Config) Validate() error { return errors.Join(checkRead(c, nil, nil)...) }

// InFlight is the most bytes one direction of a connection may have in
// flight: the smaller of the window and the send buffer (0 = unlimited).
func (c Config) InFlight() units.Size {
	switch {
	case c.Window <= 0:
		return max(c.SendBuffer, 0)
	case c.SendBuffer <= 0:
		return c.Window
	}
	return min(c.Window, c.SendBuffer)
}

// WindowLimitedRate is the most a single connection can carry through the
// window: window / RTT in bits per second (0 when unlimited).
func (c Config) WindowLimitedRate() units.Rate {
	rtt := c.EffectiveRTT()
	w := c.InFlight()
	if w <= 0 || rtt <= 0 {
		return 0
	}
	return units.Rate(float64(w) * 8 / rtt.Seconds())
}

// BulkRate is the model's steady rate of one bulk transfer in one direction:
// min(rate, window/RTT), in bits per second of payload (0 = unlimited).
func (c Config) BulkRate() units.Rate {
	r := c.Rate
	if r > 0 && c.Overhead > 0 {
		mss := float64(c.SegmentSize())
		r = units.Rate(float64(r) * mss / (mss + float64(c.Overhead)))
	}
	w := c.WindowLimitedRate()
	switch {
	case r <= 0:
		return w
	case w <= 0:
		return r
	}
	return min(r, w)
}

// String describes the configuration in the flags' own words.
func (c Config) String() string {
	var parts []string
	f, r := c.OneWay()
	if f == r {
		parts = append(parts, "rtt "+units.FormatDuration(f+r))
	} else {
		parts = append(parts, "delay "+units.FormatDuration(f)+"/"+units.FormatDuration(r))
	}
	if c.Rate > 0 {
		parts = append(parts, "rate "+c.Rate.String())
	}
	if c.MemberCount() > 1 {
		parts = append(parts, fmt.Sprintf("members %d", c.MemberCount()))
	}
	if c.Window > 0 {
		parts = append(parts, "window "+c.Window.String())
	}
	if c.SendBuffer > 0 {
		parts = append(parts, "sndbuf "+c.SendBuffer.String())
	}
	if c.Jitter > 0 {
		parts = append(parts, "jitter "+units.FormatDuration(c.Jitter))
	}
	if c.Loss > 0 {
		parts = append(parts, fmt.Sprintf("loss %g%%", c.Loss*100))
	}
	if c.Duplex != FullDuplex {
		parts = append(parts, "duplex "+c.Duplex.String())
	}
	return strings.Join(parts, ", ")
}
