package topology

import (
	"regexp"
	"strconv"
	"strings"

	"github.com/dbrig/dbrig/internal/units"
)

// SameSetting compares a server's value of a setting (have) with a
// study's (want): equal text, the same boolean (on/true/yes/1), the same
// number, or the same size or duration written differently (128MB and
// 131072kB). It says false only when it knows them to differ. A server that
// shows a size as a bare number shows bytes (MariaDB); a study's bare number
// beside a server's value with a unit is in the setting's base unit
// (PostgreSQL's shared_buffers counts 8 kB pages), and a server's bare
// number beside a study's duration in the variable's own unit, which only
// the server knows: those pairs count as the same.
func SameSetting(have, want string) bool {
	h, w := strings.ToLower(strings.TrimSpace(have)), strings.ToLower(strings.TrimSpace(want))
	if h == w {
		return true
	}
	if hb, ok := settingBool(h); ok {
		if wb, ok := settingBool(w); ok {
			return hb == wb
		}
	}
	hn, hBare := bareNumber(h)
	wn, wBare := bareNumber(w)
	ws, wSize := settingSize(w)
	switch {
	case hBare && wBare:
		return hn == wn
	case hBare && wSize:
		return hn == ws
	case hBare && hasDuration(w), wBare && (hasSize(h) || hasDuration(h)):
		return true // in a unit only the server knows
	}
	if hs, ok := settingSize(h); ok {
		if wSize {
			return hs == ws
		}
	}
	if hd, err := units.ParseDuration(h); err == nil {
		if wd, err := units.ParseDuration(w); err == nil {
			return hd == wd
		}
	}
	return false
}

func settingBool(s string) (bool, bool) {
	switch s {
	case "on", "true", "yes", "1":
		return true, true
	case "off", "false", "no", "0":
		return false, true
	}
	return false, false
}

func bareNumber(s string) (float64, bool) {
	f, err := strconv.ParseFloat(s, 64)
	return f, err == nil
}

// sizeRE is a size as PostgreSQL (kB, MB, GB, TB) and MariaDB (K, M, G, T)
// write them: their units are binary, 1 kB being 1024 bytes.
var sizeRE = regexp.MustCompile(`^([0-9]+(?:\.[0-9]+)?)\s*(b|[kmgt]i?b?)$`)

// settingSize reads a size with a unit, in bytes.
func settingSize(s string) (float64, bool) {
	m := sizeRE.FindStringSubmatch(s)
	if m == nil {
		return 0, false
	}
	v, _ := strconv.ParseFloat(m[1], 64)
	shift := strings.IndexByte("bkmgt", m[2][0]) * 10
	return v * float64(uint64(1)<<shift), true
}

func hasSize(s string) bool { _, ok := settingSize(s); return ok }

// SettingBytes reads a size with a unit as PostgreSQL and MariaDB write a
// setting's (binary: 1 kB is 1,024 bytes; 128MB, 131072kB, 128M), in bytes.
func SettingBytes(s string) (float64, bool) {
	return settingSize(strings.ToLower(strings.TrimSpace(s)))
}

func hasDuration(s string) bool {
	if _, bare := bareNumber(s); bare {
		return false
	}
	_, err := units.ParseDuration(s)
	return err == nil
}
