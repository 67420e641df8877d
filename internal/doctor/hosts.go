package doctor

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os"
	"regexp"
	"strconv"
	"strings"
)

// Target is one host of a fleet: [user@]host[:port], as ssh reaches it.
// Host may be a name from the user's ssh config.
type Target struct {
	User string
	Host string
	Port int // 0: ssh's default (or the ssh config's)
}

// String writes the target back as a hosts-file line.
func (t Target) String() string {
	s := t.Host
	if strings.Contains(s, ":") {
		s = "[" + s + "]"
	}
	if t.User != "" {
		s = t.User + "@" + s
	}
	if t.Port != 0 {
		s += ":" + strconv.Itoa(t.Port)
	}
	return s
}

var (
	userRe = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9._-]*$`)
	hostRe = regexp.MustCompile(`^[A-Za-z0-9_]([A-Za-z0-9._-]*[A-Za-z0-9_])?$`)
)

// ParseTarget reads [user@]host[:port]; an IPv6 address with a port is
// written [addr]:port. Nothing may start with "-", so no host is taken for
// an option of ssh.
func ParseTarget(s string) (Target, error) {
	var t Target
	rest := s
	if u, h, ok := strings.Cut(rest, "@"); ok {
		if !userRe.MatchString(u) {
			return t, fmt.Errorf("user %q: want letters, digits, '.', '_' or '-'", u)
		}
		t.User, rest = u, h
	}
	host, port := rest, ""
	switch {
	case strings.HasPrefix(rest, "["):
		end := strings.Index(rest, "]")
		if end < 0 {
			return t, fmt.Errorf("%q: '[' without ']'", s)
		}
		host = rest[1:end]
		if tail := rest[end+1:]; tail != "" {
			p, ok := strings.CutPrefix(tail, ":")
			if !ok || p == "" {
				return t, fmt.Errorf("%q: want [address]:port", s)
			}
			port = p
		}
		if ip := net.ParseIP(host); ip == nil || ip.To4() != nil {
			return t, fmt.Errorf("%q: %q in brackets is not an IPv6 address", s, host)
		}
	case strings.Count(rest, ":") > 1:
		if net.ParseIP(rest) == nil {
			return t, fmt.Errorf("%q: not an IPv6 address (write [address]:port to give a port)", s)
		}
	case strings.Contains(rest, ":"):
		host, port, _ = strings.Cut(rest, ":")
		if port == "" {
			return t, fmt.Errorf("port \"\": want a number from 1 to 65535 after the ':'")
		}
	}
	if !strings.Contains(host, ":") && !hostRe.MatchString(host) {
		return t, fmt.Errorf("host %q: want a host name, an address or a name from your ssh config", host)
	}
	t.Host = host
	if port != "" {
		p, err := strconv.Atoi(port)
		if err != nil || p < 1 || p > 65535 {
			return t, fmt.Errorf("port %q: want a number from 1 to 65535", port)
		}
		t.Port = p
	}
	return t, nil
}

// ReadHostsFile reads one target per line; blank lines and everything after
// a '#' are ignored. Errors name the file and line.
func ReadHostsFile(name string) ([]Target, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, fmt.Errorf("hosts file: %w", err)
	}
	defer f.Close()
	var (
		out  []Target
		errs []error
		seen = map[string]int{}
	)
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line, _, _ := strings.Cut(sc.Text(), "#")
		fields := strings.Fields(line)
		switch {
		case len(fields) == 0:
			continue
		case len(fields) > 1:
			errs = append(errs, fmt.Errorf("%s:%d: %q: want one host per line, [user@]host[:port]", name, n, strings.TrimSpace(line)))
			continue
		}
		t, err := ParseTarget(fields[0])
		if err != nil {
			errs = append(errs, fmt.Errorf("%s:%d: %w", name, n, err))
			continue
		}
		if first, dup := seen[t.String()]; dup {
			errs = append(errs, fmt.Errorf("%s:%d: %s is already on line %d", name, n, t, first))
			continue
		}
		seen[t.String()] = n
		out = append(out, t)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("hosts file %s: %w", name, err)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("hosts file %s lists no host (one [user@]host[:port] per line)", name)
	}
	return out, nil
}
