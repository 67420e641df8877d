package link

import (
	"net"
)

// newMembers makes the media of a bond, one per member, each at the link's
// rate. A reproducible link gives each member a seed of its own, so that
// their losses do not fall on the same segments.
func newMembers(cfg Config) []*medium {
	ms := make([]*medium, cfg.MemberCount())
	for i := range ms {
		c := cfg
		if c.Seed != 0 {
			c.Seed += int64(i)
		}
		ms[i] = newMedium(c)
	}
	return ms
}

// memberOf is the member that carries a connection from src to dst: the
// Linux bonding driver's layer3+4 transmit hash (xmit_hash_policy=layer3+4,
// 802.3ad), which puts a connection's every segment on one member for the
// connection's life, so that they stay in order. Addresses that are not TCP
// (a test's pipe) ride the first member.
func memberOf(src, dst net.Addr, members int) int {
	s, ok1 := src.(*net.TCPAddr)
	d, ok2 := dst.(*net.TCPAddr)
	if members <= 1 || !ok1 || !ok2 {
		return 0
	}
	h := uint32(s.Port)<<16 | uint32(d.Port)
	h ^= ipv4Word(s.IP) ^ ipv4Word(d.IP)
	h ^= h >> 16
	h ^= h >> 8
	return int((h >> 1) % uint32(members))
}

// ipv4Word is an IPv4 address as one word, or the last four bytes of an
// IPv6 one: the part the hash folds in.
func ipv4Word(ip net.IP) uint32 {
	if v4 := ip.To4(); v4 != nil {
		ip = v4
	}
	if len(ip) < 4 {
		return 0
	}
	b := ip[len(ip)-4:]
	return uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
}
