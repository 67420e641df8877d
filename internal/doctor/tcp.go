package doctor

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/dbrig/dbrig/internal/link"
	"github.com/dbrig/dbrig/internal/units"
)

// Link is a network path the user declares with --link: its round-trip
// time and bandwidth, from which the bandwidth-delay product follows.
type Link struct {
	Spec string // as written: "150ms:1gbit", "tukwila-dublin"
	RTT  time.Duration
	Rate units.Rate
}

// MarshalJSON writes the link with its figures in plain units.
func (l Link) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Spec     string  `json:"spec"`
		RTTMS    float64 `json:"rtt_ms"`
		RateBps  float64 `json:"rate_bps"`
		BDPBytes float64 `json:"bdp_bytes"`
	}{l.Spec, float64(l.RTT) / float64(time.Millisecond), float64(l.Rate), l.BDP()})
}

// BDP is the bandwidth-delay product in bytes: what must be in flight to
// fill the link.
func (l Link) BDP() float64 { return l.Rate.BytesPerSecond() * l.RTT.Seconds() }

// ParseLink reads a link declaration: "RTT:RATE" (150ms:1gbit), a link
// profile with a rate (tukwila-dublin:1gbit), or a profile alone
// (tukwila-dublin, at the profile's rate). Profiles are dbrig's named links
// (dbrig link --list-profiles), modifiers included. The RTT and the rate
// are read by units.ParseDuration and units.ParseRate, as everywhere in
// dbrig, so "77 ms:10 gigabits" is the same link as "77ms:10gbit".
func ParseLink(spec string) (Link, error) {
	s := strings.TrimSpace(spec)
	if s == "" {
		return Link{}, errors.New("empty --link: want RTT:RATE (150ms:1gbit) or a link profile (tukwila-dublin[:1gbit])")
	}
	l := Link{Spec: s}
	left, right, hasRate := s, "", false
	if i := strings.LastIndex(s, ":"); i >= 0 {
		left, right, hasRate = s[:i], s[i+1:], true
	}
	if hasRate {
		r, err := units.ParseRate(right)
		if err != nil {
			return Link{}, fmt.Errorf("--link %q: %w", spec, err)
		}
		if r <= 0 {
			return Link{}, fmt.Errorf("--link %q: the rate must be above zero", spec)
		}
		l.Rate = r
	}
	if startsWithDigit(left) {
		rtt, err := units.ParseDuration(left)
		if err != nil {
			return Link{}, fmt.Errorf("--link %q: %w", spec, err)
		}
		if !hasRate {
			return Link{}, fmt.Errorf("--link %q: a round-trip time needs a rate too, such as %s:1gbit", spec, left)
		}
		l.RTT = rtt
	} else {
		cfg, err := link.ParseProfile(left)
		if err != nil {
			return Link{}, fmt.Errorf("--link %q: %w", spec, err)
		}
		l.RTT = cfg.EffectiveRTT()
		if l.RTT <= 0 {
			return Link{}, fmt.Errorf("--link %q: profile %q has no delay, so no bandwidth-delay product", spec, left)
		}
		if !hasRate {
			l.Rate = cfg.Rate
		}
		if l.Rate <= 0 {
			return Link{}, fmt.Errorf("--link %q: profile %q has no rate; give one, such as %s:1gbit", spec, left, left)
		}
	}
	if l.RTT <= 0 {
		return Link{}, fmt.Errorf("--link %q: the round-trip time must be above zero", spec)
	}
	return l, nil
}

func startsWithDigit(s string) bool { return s != "" && (s[0] >= '0' && s[0] <= '9' || s[0] == '.') }

// tcpSettings are the kernel's TCP buffer settings (bytes).
type tcpSettings struct {
	known            bool
	rmem, wmem       [3]int64 // min, default, max
	rmemMax, wmemMax int64    // net.core: the ceiling for SO_RCVBUF/SO_SNDBUF
	windowScaling    int64    // 1 on, 0 off, -1 unknown
	moderateRcvbuf   int64    // receive-buffer autotuning: 1 on, 0 off, -1 unknown
	congestion       string
	keepaliveTime    int64 // seconds; 0 unknown
	keepaliveIntvl   int64
	keepaliveProbes  int64
}

func readTCP(src Source) tcpSettings {
	var t tcpSettings
	triple := func(name string) ([3]int64, bool) {
		var v [3]int64
		s, ok := readString(src, name)
		f := strings.Fields(s)
		if !ok || len(f) != 3 {
			return v, false
		}
		for i := range f {
			n, err := strconv.ParseInt(f[i], 10, 64)
			if err != nil {
				return v, false
			}
			v[i] = n
		}
		return v, true
	}
	var okR, okW bool
	t.rmem, okR = triple("proc/sys/net/ipv4/tcp_rmem")
	t.wmem, okW = triple("proc/sys/net/ipv4/tcp_wmem")
	t.known = okR && okW
	t.rmemMax, _ = readInt(src, "proc/sys/net/core/rmem_max")
	t.wmemMax, _ = readInt(src, "proc/sys/net/core/wmem_max")
	intOr := func(name string, def int64) int64 {
		if v, ok := readInt(src, name); ok {
			return v
		}
		return def
	}
	t.windowScaling = intOr("proc/sys/net/ipv4/tcp_window_scaling", -1)
	t.moderateRcvbuf = intOr("proc/sys/net/ipv4/tcp_moderate_rcvbuf", -1)
	t.congestion, _ = readString(src, "proc/sys/net/ipv4/tcp_congestion_control")
	t.keepaliveTime, _ = readInt(src, "proc/sys/net/ipv4/tcp_keepalive_time")
	t.keepaliveIntvl, _ = readInt(src, "proc/sys/net/ipv4/tcp_keepalive_intvl")
	t.keepaliveProbes, _ = readInt(src, "proc/sys/net/ipv4/tcp_keepalive_probes")
	return t
}

// windowShare is the part of a socket buffer that becomes TCP window. On
// receive Linux keeps part of the buffer for its own overhead: half with the
// classic tcp_adv_win_scale = 1, and kernels from 6.7 measure the ratio per
// connection, starting at half. On send the buffer holds the data in flight
// and as much again queued (tcp_sndbuf_expand sizes it at twice the window).
// Half is the share the ceiling is computed with on both sides.
const windowShare = 0.5

// maxWindows are the largest receive and send windows one connection can
// reach with these settings, in bytes.
func (t tcpSettings) maxWindows() (recv, send float64) {
	rbuf := t.rmem[2]
	if t.moderateRcvbuf == 0 {
		rbuf = t.rmem[1] // no autotuning: the buffer stays at its default
	}
	recv = float64(rbuf) * windowShare
	send = float64(t.wmem[2]) * windowShare
	if t.windowScaling == 0 {
		recv = min(recv, 65535)
	}
	return recv, send
}

func onOff(v int64) string {
	switch v {
	case 1:
		return "on"
	case 0:
		return "off"
	}
	return "unknown"
}

// rateWords formats a rate in bit/s to three significant digits.
func rateWords(bps float64) string {
	switch {
	case bps >= 1e9:
		return strconv.FormatFloat(bps/1e9, 'g', 3, 64) + " Gbit/s"
	case bps >= 1e6:
		return strconv.FormatFloat(bps/1e6, 'g', 3, 64) + " Mbit/s"
	case bps >= 1e3:
		return strconv.FormatFloat(bps/1e3, 'g', 3, 64) + " kbit/s"
	}
	return strconv.FormatFloat(bps, 'g', 3, 64) + " bit/s"
}

// bytesWords formats a byte count in decimal units, as BDPs are quoted.
func bytesWords(b float64) string {
	switch {
	case b >= 1e9:
		return strconv.FormatFloat(b/1e9, 'g', 3, 64) + " GB"
	case b >= 1e6:
		return strconv.FormatFloat(b/1e6, 'g', 3, 64) + " MB"
	case b >= 1e3:
		return strconv.FormatFloat(b/1e3, 'g', 3, 64) + " kB"
	}
	return strconv.FormatFloat(b, 'g', 3, 64) + " B"
}

func checkTCP(h *host, links []Link) []Result {
	t := h.tcp
	if !t.known {
		return []Result{result("tcp.buffers", "", Skip, "net.ipv4.tcp_rmem and tcp_wmem not readable", "")}
	}
	obs := fmt.Sprintf("tcp_rmem %d %d %d, tcp_wmem %d %d %d, core rmem_max %s wmem_max %s, window scaling %s, autotuning %s, congestion %s",
		t.rmem[0], t.rmem[1], t.rmem[2], t.wmem[0], t.wmem[1], t.wmem[2], sizeWords(t.rmemMax), sizeWords(t.wmemMax),
		onOff(t.windowScaling), onOff(t.moderateRcvbuf), t.congestion)
	buf := result("tcp.buffers", "", Pass, obs, "window scaling on, receive autotuning on").
		with("tcp_rmem", t.rmem[:], "tcp_wmem", t.wmem[:], "rmem_max", t.rmemMax, "wmem_max", t.wmemMax,
			"window_scaling", t.windowScaling == 1, "moderate_rcvbuf", t.moderateRcvbuf == 1, "congestion_control", t.congestion)
	switch {
	case t.windowScaling == 0:
		buf.Status = Fail
		buf = buf.withFix("Turn window scaling on: sysctl -w net.ipv4.tcp_window_scaling=1 (and in /etc/sysctl.d/); without it " +
			"no connection's window exceeds 64 KiB, 5.24 Mbit/s at 100 ms.")
	case t.moderateRcvbuf == 0:
		buf.Status = Warn
		buf = buf.withFix(fmt.Sprintf("Turn receive-buffer autotuning on: sysctl -w net.ipv4.tcp_moderate_rcvbuf=1; without it a "+
			"connection's receive buffer stays at tcp_rmem's default (%s).", sizeWords(t.rmem[1])))
	}
	out := []Result{buf}
	recv, send := t.maxWindows()
	if len(links) == 0 {
		var at []string
		for _, rtt := range []time.Duration{time.Millisecond, 10 * time.Millisecond, 77 * time.Millisecond, 150 * time.Millisecond} {
			at = append(at, fmt.Sprintf("%s at %s", rateWords(min(recv, send)*8/rtt.Seconds()), units.FormatDuration(rtt)))
		}
		out = append(out, result("tcp.bdp", "", Info,
			"no --link declared; one connection reaches "+strings.Join(at, ", "),
			"declare the links the database uses: --link 150ms:1gbit or --link tukwila-dublin").
			with("max_receive_window_bytes", int64(recv), "max_send_window_bytes", int64(send)))
		return out
	}
	for _, l := range links {
		out = append(out, checkBDP(t, l, recv, send))
	}
	return out
}

func checkBDP(t tcpSettings, l Link, recv, send float64) Result {
	rtt := l.RTT.Seconds()
	bdp := l.BDP()
	rate := float64(l.Rate)
	recvCeil, sendCeil := recv*8/rtt, send*8/rtt
	obs := fmt.Sprintf("BDP %s (%s x %s); one connection reaches %s receiving, %s sending",
		bytesWords(bdp), l.Rate, units.FormatDuration(l.RTT), rateWords(recvCeil), rateWords(sendCeil))
	// The buffer each side needs, rounded up to a MiB.
	need := int64(math.Ceil(bdp/windowShare/float64(units.MiB))) * int64(units.MiB)
	r := result("tcp.bdp", l.Spec, Pass, obs, "a ceiling of at least "+l.Rate.String()).
		with("rtt_seconds", rtt, "rate_bps", rate, "bdp_bytes", bdp, "receive_ceiling_bps", recvCeil, "send_ceiling_bps", sendCeil,
			"needed_buffer_bytes", need)
	var fixes []string
	if recvCeil < rate {
		switch {
		case t.windowScaling == 0:
			fixes = append(fixes, "turn window scaling on (sysctl -w net.ipv4.tcp_window_scaling=1): the window stops at 64 KiB without it")
		case t.moderateRcvbuf == 0:
			fixes = append(fixes, "turn autotuning on (sysctl -w net.ipv4.tcp_moderate_rcvbuf=1)")
		}
		if t.rmem[2] < need {
			fixes = append(fixes, fmt.Sprintf("raise tcp_rmem's maximum from %s to %s: sysctl -w net.ipv4.tcp_rmem='%d %d %d'",
				sizeWords(t.rmem[2]), sizeWords(need), t.rmem[0], t.rmem[1], need))
		}
	}
	if sendCeil < rate && t.wmem[2] < need {
		fixes = append(fixes, fmt.Sprintf("raise tcp_wmem's maximum from %s to %s: sysctl -w net.ipv4.tcp_wmem='%d %d %d'",
			sizeWords(t.wmem[2]), sizeWords(need), t.wmem[0], t.wmem[1], need))
	}
	if len(fixes) > 0 {
		r.Status = Fail
		fix := fmt.Sprintf("To carry %s over %s on one connection (BDP %s), %s.", l.Rate, units.FormatDuration(l.RTT),
			bytesWords(bdp), strings.Join(fixes, "; "))
		if t.rmemMax < need || t.wmemMax < need {
			fix += fmt.Sprintf(" Programs that set SO_RCVBUF/SO_SNDBUF themselves are capped by net.core.rmem_max/wmem_max: raise those to %d too.", need)
		}
		r = r.withFix(fix + " Make it permanent in /etc/sysctl.d/ on both ends of the link.")
	}
	return r
}
