package link

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/dbrig/dbrig/internal/units"
)

// Param is one setting of the link's model. A study file's [[link]] key, a
// command's flag and a profile all write it in the same words and are read
// by the same parser, held to the same bound with the same reason, and
// documented by the same line, so that a spelling or a bound cannot differ
// between them.
type Param struct {
	// Name is the flag's name; Key is the study file's key.
	Name string
	// Doc is the flag's usage: one line, a word in backquotes being the
	// value's placeholder in --help.
	Doc string
	// Bound says which values the setting takes and why.
	Bound string
	// flagType is the type --help shows when Doc has no placeholder.
	flagType string
	// read parses a written value into c, leaving bounds to check.
	read func(c *Config, text string) error
	// check reports the setting's value in c and what is wrong with it (""
	// when nothing is). A value nobody wrote may mean a default (mss 0).
	check func(c Config, written bool) (value, complaint string)
	// relate, when set, checks the setting against the others (spelled as
	// the reader writes them) once all are read.
	relate func(c Config, spell func(string) string) (value, complaint string)
}

// Key is the parameter's key in a study file: its name with '_' for '-',
// as every other key of a study file is written.
func (p Param) Key() string { return strings.ReplaceAll(p.Name, "-", "_") }

// Usage is Doc as --help prints it, without the placeholder's backquotes.
func (p Param) Usage() string { return strings.ReplaceAll(p.Doc, "`", "") }

// ParamError is a setting that cannot be read or is beyond its bound.
type ParamError struct {
	// Param is the parameter's name.
	Param string
	// FromBase is set when the value came from the Config read over (a
	// profile) rather than from what was written.
	FromBase bool
	// Value is the value as the model holds it; "" when it was unreadable.
	Value string
	Err   error
	// spelled is the name as its reader writes it ("--rtt", "rtt").
	spelled string
}

func (e *ParamError) Error() string {
	if e.Value == "" {
		return e.spelled + ": " + e.Err.Error()
	}
	return e.spelled + " " + e.Value + ": " + e.Err.Error()
}

func (e *ParamError) Unwrap() error { return e.Err }

// Params returns the link's parameters in the order --help lists them.
func Params() []Param { return slices.Clone(params) }

// LookupParam finds a parameter by its flag name or study key.
func LookupParam(name string) (Param, bool) {
	for _, p := range params {
		if p.Name == name || p.Key() == name {
			return p, true
		}
	}
	return Param{}, false
}

// Reasons of the bounds, said the same way in every error and in the docs.
const (
	beyondMoon   = "the Moon is 2.6 s away and back: a longer WAN is a typo"
	rateTooSlow  = "slower, one full segment takes more than 10 s"
	rateTooFast  = "faster than any Ethernet"
	windowScaled = "TCP's largest window with window scaling, RFC 7323"
	mssWhy       = "the segment every IPv4 host accepts, the largest IPv4 datagram less its headers"
	rtoWhy       = "Linux's largest retransmission timeout"
)

var params = []Param{
	durationParam("rtt", "round-trip propagation delay (a `duration` such as 77ms or 200us), split evenly between the directions",
		func(c *Config) *time.Duration { return &c.RTT }, MaxRTT, beyondMoon),
	durationParam("forward-delay", "one-way delay client to server (a `duration`; overrides half of --rtt)",
		func(c *Config) *time.Duration { return &c.ForwardDelay }, MaxRTT, beyondMoon),
	durationParam("reverse-delay", "one-way delay server to client (a `duration`; overrides half of --rtt)",
		func(c *Config) *time.Duration { return &c.ReverseDelay }, MaxRTT, beyondMoon),
	rateParam(),
	membersParam(),
	windowParam(),
	sendBufferParam(),
	durationParam("jitter", "extra delay per segment, uniform in [0, `duration`] (such as 2ms); never reorders",
		func(c *Config) *time.Duration { return &c.Jitter }, MaxRTT, beyondMoon),
	lossParam(),
	duplexParam(),
	bytesParam("mss", "segment size in `bytes`, 536 to 65495 (default 1448)",
		func(c *Config) *int { return &c.MSS }, MinMSS, MaxMSS, mssWhy, true),
	bytesParam("overhead", "header `bytes` per segment counted in serialization (such as 52 for IPv4+TCP+timestamps; default 0)",
		func(c *Config) *int { return &c.Overhead }, 0, MaxOverhead, "no header is longer than a whole IPv4 datagram", false),
	durationParam("rto", "minimum retransmission timeout (a `duration`; default 200ms): a loss stalls RTT + this, doubling when the retransmission is lost too",
		func(c *Config) *time.Duration { return &c.RTO }, MaxRTO, rtoWhy),
	seedParam(),
}

// field builds a parameter held in one field of Config.
type field[T comparable] struct {
	of    func(*Config) *T
	parse func(string) (T, error)
	show  func(T) string
	// complain says what is wrong with a value ("" when nothing is).
	complain func(T) string
	// zeroUnset: a 0 nobody wrote is the model's default, but a written 0
	// is refused, since it would not be the 0 it says.
	zeroUnset bool
}

func (f field[T]) param(name, doc, bound string) Param {
	return Param{Name: name, Doc: doc, Bound: bound, flagType: "string",
		read: func(c *Config, text string) error {
			v, err := f.parse(text)
			if err == nil {
				*f.of(c) = v
			}
			return err
		},
		check: func(c Config, written bool) (string, string) {
			v := *f.of(&c)
			var zero T
			if f.zeroUnset && !written && v == zero {
				return "", ""
			}
			return f.show(v), f.complain(v)
		},
	}
}

func durationParam(name, doc string, of func(*Config) *time.Duration, most time.Duration, why string) Param {
	return field[time.Duration]{of: of, parse: units.ParseDuration, show: time.Duration.String,
		complain: func(d time.Duration) string {
			switch {
			case d < 0:
				return "must not be negative"
			case d > most:
				return fmt.Sprintf("at most %s (%s)", most, why)
			}
			return ""
		},
	}.param(name, doc, fmt.Sprintf("0 to %s: %s", most, why))
}

func rateParam() Param {
	return field[units.Rate]{of: func(c *Config) *units.Rate { return &c.Rate }, parse: units.ParseRate,
		show: func(r units.Rate) string {
			if r < 0 {
				return strconv.FormatFloat(float64(r), 'g', -1, 64)
			}
			return r.String()
		},
		complain: func(r units.Rate) string {
			switch {
			case r < 0:
				return "must not be negative"
			case r > 0 && r < MinRate:
				return fmt.Sprintf("at least %s, or 0 for unlimited (%s)", MinRate, rateTooSlow)
			case r > MaxRate:
				return fmt.Sprintf("at most %s (%s)", MaxRate, rateTooFast)
			}
			return ""
		},
	}.param("rate", "serialization `rate` in bit/s, decimal units: 1gbit, 100mbit, 10 Gbps, 10gigabit, 1.5Mbit/s, 1g; "+
		"bytes per second with a capital B: 125MB/s (0 = unlimited)",
		fmt.Sprintf("0 (unlimited), or %s to %s: %s; %s", MinRate, MaxRate, rateTooSlow, rateTooFast))
}

func membersParam() Param {
	const why = "802.3ad (802.1AX) aggregates at most 8 active members"
	bound := fmt.Sprintf("1 to %d: %s", MaxMembers, why)
	return field[int]{of: func(c *Config) *int { return &c.Members }, zeroUnset: true,
		parse: func(s string) (int, error) {
			n, err := strconv.Atoi(strings.TrimSpace(s))
			if err != nil {
				return 0, fmt.Errorf("%q: want a whole number of members, such as 2", s)
			}
			return n, nil
		},
		show: strconv.Itoa,
		complain: func(n int) string {
			if n < 1 || n > MaxMembers {
				return "want " + bound
			}
			return ""
		},
	}.param("members", "links bonded into one (802.3ad), each at --rate: a connection rides one member, chosen by a hash of its ports (default 1)",
		bound+"; 0 is refused, not taken for the default")
}

func windowParam() Param {
	return inFlightParam("window", "TCP window: most bytes in flight per direction of a connection (a `size` such as 64KiB, 65535, 16MiB; 0 = unlimited); at least --mss",
		func(c *Config) *units.Size { return &c.Window })
}

func sendBufferParam() Param {
	return inFlightParam("sndbuf", "the sender's buffer: most bytes the sending application may have unacknowledged per direction, beside the window (a `size` such as 8KiB; 0 = unlimited); at least --mss",
		func(c *Config) *units.Size { return &c.SendBuffer })
}

// inFlightParam is a bound on the bytes in flight (the window, the send
// buffer): 0 for none, else one segment to TCP's largest window.
func inFlightParam(name, doc string, of func(*Config) *units.Size) Param {
	p := field[units.Size]{of: of, parse: units.ParseSize,
		show: units.Size.String,
		complain: func(w units.Size) string {
			switch {
			case w < 0:
				return "must not be negative"
			case w > MaxWindow:
				return fmt.Sprintf("at most %s (%s)", units.Size(MaxWindow), windowScaled)
			}
			return ""
		},
	}.param(name, doc, fmt.Sprintf("0 (unlimited), or one segment (mss) to %s: %s", units.Size(MaxWindow), windowScaled))
	// A bound smaller than a segment would never let one through.
	p.relate = func(c Config, spell func(string) string) (string, string) {
		if w := *of(&c); w > 0 && int(w) < c.SegmentSize() {
			return w.String(), fmt.Sprintf("smaller than one segment (%s %d bytes): want at least the segment, or 0 for unlimited",
				spell("mss"), c.SegmentSize())
		}
		return "", ""
	}
	return p
}

func lossParam() Param {
	const want = "want a probability below 100%, such as 0.1%"
	return field[float64]{of: func(c *Config) *float64 { return &c.Loss }, parse: units.ParsePercent,
		show: func(p float64) string { return strconv.FormatFloat(p*100, 'g', -1, 64) + "%" },
		complain: func(p float64) string {
			if p < 0 || p >= 1 || p != p {
				return want
			}
			return ""
		},
	}.param("loss", "`probability` a segment is lost (such as 0.1% or 0.001); each loss stalls the stream for a retransmission timeout",
		"0 to below 100%: at 100% no segment would ever arrive")
}

func duplexParam() Param {
	return field[Duplex]{of: func(c *Config) *Duplex { return &c.Duplex }, parse: ParseDuplex, show: Duplex.String,
		complain: func(d Duplex) string {
			if d < FullDuplex || d > Mismatch {
				return "want full, half or mismatch"
			}
			return ""
		},
	}.param("duplex", "duplex `mode`: full, half (both directions share the medium) or mismatch (upstream end half duplex: late collisions)",
		"full, half or mismatch")
}

// bytesParam is a count of bytes written as a size ("1448", "1.5KiB").
func bytesParam(name, usage string, of func(*Config) *int, least, most int, why string, zeroUnset bool) Param {
	bound := fmt.Sprintf("%d to %d bytes", least, most)
	doc := bound + ": " + why
	if zeroUnset {
		doc += "; 0 is refused, not taken for the default"
	}
	return field[int]{of: of, zeroUnset: zeroUnset,
		parse: func(s string) (int, error) {
			n, err := units.ParseSize(s)
			return int(n), err
		},
		show: strconv.Itoa,
		complain: func(n int) string {
			if n < least || n > most {
				return fmt.Sprintf("want %s (%s)", bound, why)
			}
			return ""
		},
	}.param(name, usage, doc)
}

func seedParam() Param {
	p := field[int64]{of: func(c *Config) *int64 { return &c.Seed },
		parse: func(s string) (int64, error) {
			n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("%q: want a whole number, such as 7 (0 = random)", s)
			}
			return n, nil
		},
		show:     func(n int64) string { return strconv.FormatInt(n, 10) },
		complain: func(int64) string { return "" },
	}.param("seed", "seed for jitter and loss, for reproducible runs (0 = random)", "any whole number")
	p.flagType = "int64"
	return p
}

// readText reads the values written for some parameters, as text keyed by
// parameter name, over base, in the table's order. Each problem is a
// *ParamError naming the parameter as spell writes it.
func readText(base Config, written map[string]string, spell func(string) string) (Config, []error) {
	c := base
	var errs []error
	for _, p := range params {
		text, ok := written[p.Name]
		if !ok {
			continue
		}
		if err := p.read(&c, text); err != nil {
			errs = append(errs, &ParamError{Param: p.Name, Err: err, spelled: spell(p.Name)})
			continue
		}
		if value, complaint := p.check(c, true); complaint != "" {
			errs = append(errs, &ParamError{Param: p.Name, Value: value, Err: errors.New(complaint), spelled: spell(p.Name)})
		}
	}
	return c, errs
}

// checkRead checks what readText could not see alone: every value that
// came from base, and how the settings relate. A problem is blamed on a
// written setting when one was, else on base, whose settings are spelled
// by their names.
func checkRead(c Config, written map[string]string, spell func(string) string) []error {
	var errs []error
	for _, p := range params {
		_, byWriter := written[p.Name]
		sp := spell
		var value, complaint string
		if !byWriter {
			sp = func(name string) string { return name }
			value, complaint = p.check(c, false)
		}
		if complaint == "" && p.relate != nil {
			value, complaint = p.relate(c, sp)
		}
		if complaint != "" {
			errs = append(errs, &ParamError{Param: p.Name, FromBase: !byWriter, Value: value, Err: errors.New(complaint), spelled: sp(p.Name)})
		}
	}
	return errs
}

// Override returns base with the settings of a study file's table written
// over it: values keyed by study key as the TOML decoder gives them, a
// string in the flags' own words or a number. Every problem is returned,
// each a *ParamError, in the table's order.
func Override(base Config, settings map[string]any) (Config, error) {
	var errs []error
	for _, key := range slices.Sorted(maps.Keys(settings)) {
		if p, ok := LookupParam(key); !ok || p.Key() != key {
			errs = append(errs, &ParamError{Param: key, spelled: key, Err: fmt.Errorf("no such setting of a link: want one of %s", keys())})
		}
	}
	written := map[string]string{}
	for _, p := range params {
		v, ok := settings[p.Key()]
		if !ok {
			continue
		}
		text, err := tomlText(v)
		if err != nil {
			errs = append(errs, &ParamError{Param: p.Name, spelled: p.Key(), Err: err})
			continue
		}
		written[p.Name] = text
	}
	byKey := func(name string) string { return strings.ReplaceAll(name, "-", "_") }
	c, readErrs := readText(base, written, byKey)
	errs = append(errs, readErrs...)
	if len(errs) == 0 {
		errs = checkRead(c, written, byKey)
	}
	return c, errors.Join(errs...)
}

// tomlText turns a decoded TOML value into the text a flag would hold.
func tomlText(v any) (string, error) {
	switch x := v.(type) {
	case string:
		return x, nil
	case int64:
		return strconv.FormatInt(x, 10), nil
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64), nil
	}
	kind := fmt.Sprintf("a %T", v)
	switch v.(type) {
	case bool:
		kind = "a boolean"
	case []any, []map[string]any:
		kind = "a list"
	case map[string]any:
		kind = "a table"
	}
	return "", fmt.Errorf("want a string in a flag's words (such as \"77ms\", \"1gbit\", \"64KiB\", \"0.1%%\") or a number, got %s", kind)
}

func keys() string {
	var ks []string
	for _, p := range params {
		ks = append(ks, p.Key())
	}
	return strings.Join(ks, ", ")
}
