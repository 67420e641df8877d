package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Engine is one kind of database server dbrig can start (PostgreSQL,
// MariaDB) or attach to as a target. An engine is made once in main, with
// the binaries directory the user chose, and registered in a [Registry].
type Engine interface {
	// Name is the engine's name in study files and URIs: "postgres".
	Name() string
	// Title is its name for people: "PostgreSQL".
	Title() string
	// Binaries finds the server programs (once; later calls return the
	// same) or says how to install them.
	Binaries(ctx context.Context) (Binaries, error)
	// StudySetting says, without a server, whether a study may set this
	// setting: nil when it is on the engine's list of performance settings
	// (its [StudySettings]), else a *SettingError that says what the
	// setting decides when dbrig owns it, or how to ask for a missing one.
	// The study's parser asks it for every setting, so a refusal names
	// the file, line and key before anything starts; Start and
	// Reconfigure ask it again.
	StudySetting(name string) error
	// CheckSettings validates server settings with the server's own
	// catalogue and parser, before anything starts. It returns one error
	// per bad setting, each a *SettingError.
	CheckSettings(ctx context.Context, settings map[string]string) []error
	// SplitSettings parts settings into those a session can set for itself
	// (PostgreSQL's context "user") and those only the server's
	// configuration can: on a target dbrig applies the first kind to its
	// own sessions and requires the second kind to hold already.
	SplitSettings(ctx context.Context, settings map[string]string) (session, server map[string]string)
	// Start creates and starts an instance dbrig owns. On error nothing is
	// left running or on disk (unless opts.Keep).
	Start(ctx context.Context, cfg InstanceConfig, opts StartOptions) (Instance, error)
	// Attach connects to a server dbrig does not own (a target).
	Attach(ctx context.Context, name string, target Conn, opts AttachOptions) (Instance, error)
	// ParseURI reads a user's connection string for this engine. Errors
	// never contain the password.
	ParseURI(uri string) (Conn, error)
	// Schemes are the URI schemes ParseURI accepts ("postgres",
	// "postgresql").
	Schemes() []string
}

// Binaries is one installation of an engine's server programs.
type Binaries struct {
	Dir     string
	Version string // "15.18", "10.11.19"
}

// InstanceConfig is one database server as a study resolves it for one
// point and as the topology and the engine run it: the one description of
// an instance shared by the plan, the topology and the engines.
type InstanceConfig struct {
	Name   string `json:"name"`
	Engine string `json:"engine"`
	Site   string `json:"site"`
	// Settings are the server's own settings (postgresql.conf keys,
	// mariadbd options), applied on top of the ones dbrig owns.
	Settings map[string]string `json:"settings,omitempty"`
	// CPUs pins the server and every process it forks to a CPU list
	// ("0", "0-1"); "" = any CPU.
	CPUs string `json:"cpus,omitempty"`
	// Memory caps the server's memory in bytes (cgroup v2 memory.max); 0 =
	// no cap.
	Memory int64 `json:"memory,omitempty"`
	// CPUSpeed caps the CPU time of the server and every process it forks,
	// in cores' worth per CFS period (0.5 = half of one core), to emulate a
	// slower or smaller processor; 0 = no cap.
	CPUSpeed float64 `json:"cpu_speed,omitempty"`
	// DataDir is the directory under which the instance's data directory
	// is made ("" = the run's base directory).
	DataDir string `json:"data_dir,omitempty"`
	// WALDir is the directory under which its write-ahead log (PostgreSQL)
	// or redo log (MariaDB) is made ("" = inside the data directory).
	WALDir string `json:"wal_dir,omitempty"`
	// DataDisk is the disk profile (blockdev.LookupProfile) of an emulated
	// disk that holds the data directory, and the WAL unless WALDisk or
	// WALDir puts it elsewhere: a dbrig loop device made in DataDir (or the
	// run's base directory), throttled for this server alone.
	DataDisk string `json:"data_disk,omitempty"`
	// WALDisk is the disk profile of an emulated disk of the WAL's own,
	// made in WALDir (or the run's base directory).
	WALDisk string `json:"wal_disk,omitempty"`
	// Target, when set, is the name of the user's server that stands in for
	// this instance (`--target NAME=URI`): dbrig starts nothing for it.
	Target string `json:"target,omitempty"`
}

// SameServer reports whether two configurations need the same server
// process apart from its settings: an instance whose configuration differs
// only in settings is reconfigured in place, any other difference needs a
// new instance.
func (c InstanceConfig) SameServer(o InstanceConfig) bool {
	return c.Name == o.Name && c.Engine == o.Engine && c.Site == o.Site && c.CPUs == o.CPUs &&
		c.Memory == o.Memory && c.CPUSpeed == o.CPUSpeed && c.DataDir == o.DataDir && c.WALDir == o.WALDir && c.Target == o.Target &&
		c.DataDisk == o.DataDisk && c.WALDisk == o.WALDisk
}

// Equal reports whether two configurations are the same in every attribute.
func (c InstanceConfig) Equal(o InstanceConfig) bool {
	return c.SameServer(o) && maps.Equal(c.Settings, o.Settings)
}

// StartOptions are how a run starts instances, the same for all of them.
type StartOptions struct {
	// BaseDir holds instance directories (default os.TempDir()).
	BaseDir string
	// Keep leaves an instance's directory (data, logs) after Stop.
	Keep bool
	Log  *slog.Logger
	// Fixture holds server settings that dbrig's own code gives a server
	// standing in for a user's (a test's target with TLS on and its
	// connections logged). They never come from a study file, so they are
	// not limited to what a study may vary; where the server listens and
	// how logins work stay dbrig's, and every value stays one line.
	Fixture map[string]string
}

// AttachOptions are how a run attaches to a target.
type AttachOptions struct {
	// Keep leaves the databases dbrig made on the target after the run.
	Keep bool
	Log  *slog.Logger
}

// Instance is one running database server: one dbrig started, or a target.
type Instance interface {
	Name() string
	// Engine is the engine's name ("postgres").
	Engine() string
	// Version is the server's version ("15.18").
	Version() string
	// Owned is false for a target: dbrig never stops, restarts or
	// reconfigures it, and touches only the databases it created there.
	Owned() bool
	// Login is the administrative login to database db over TCP.
	Login(db string) Conn
	// UnixLogin is the login through the server's unix socket; ok is false
	// when dbrig cannot reach one (a target reached over TCP).
	UnixLogin(db string) (c Conn, ok bool)
	// CreateDatabase makes an empty database of that name for a workload,
	// replacing one dbrig made before; it refuses to replace one dbrig did
	// not make. On a target whose login may not create databases it makes
	// a schema of that name instead, and Login(name) says so (Conn.Schema).
	CreateDatabase(ctx context.Context, name string) error
	// DropDatabase removes a database dbrig made (no error when absent).
	DropDatabase(ctx context.Context, name string) error
	// Exec runs SQL statements in one session on database db.
	Exec(ctx context.Context, db string, sql ...string) error
	// Setting reads a server setting's current value back from the server.
	Setting(ctx context.Context, name string) (string, error)
	// Reconfigure makes the server run with exactly these settings (on top
	// of dbrig's own): reloadable changes are reloaded, others restart the
	// server in place on the same data. It reports whether it restarted.
	Reconfigure(ctx context.Context, settings map[string]string) (restarted bool, err error)
	// Stop stops a server dbrig started and removes its directory (unless
	// kept); for a target it only closes what dbrig opened. Safe to call
	// more than once.
	Stop(ctx context.Context) error
	// Exited is closed when the server process exits (never, for a target).
	Exited() <-chan struct{}
	// PID is the server's main process id (0 for a target).
	PID() int
	// LogPath is the server's log file ("" for a target).
	LogPath() string
}

// Restarter is an optional ability of an owned Instance: stop the server
// and start it again in place, on the same data and with the same settings,
// so that its caches start empty (a cold read needs it). A target never
// has it: dbrig does not restart what it did not start.
type Restarter interface {
	Restart(ctx context.Context) error
}

// InitFixer is an optional ability of an Engine: some of its settings are
// fixed when an instance's data directory is made (MariaDB's
// innodb_page_size), so a change of one needs a new instance, not a
// restart in place.
type InitFixer interface {
	// FixedAtInitChanged reports whether a fixed setting differs between
	// two sets of settings, and which.
	FixedAtInitChanged(old, new map[string]string) (name string, changed bool)
}

// Monitored is an Instance with a login for monitoring that a workload
// cannot crowd out: one that still connects when the workload has taken
// every ordinary connection slot (PostgreSQL's reserved superuser slots,
// MariaDB's extra_port). ok is false when the instance has none.
type Monitored interface {
	MonitorLogin(db string) (c Conn, ok bool)
}

// SettingError is one server setting the engine refuses.
type SettingError struct {
	Engine string
	Key    string
	Value  string
	// Msg says what is wrong and what was expected.
	Msg string
	// Closest is the nearest valid name when the name is unknown.
	Closest string
	// NameRefused says the name itself is refused (unknown, read-only,
	// dbrig's own, given twice), whatever its value.
	NameRefused bool
}

func (e *SettingError) Error() string {
	if e.Closest != "" {
		return fmt.Sprintf("%s (did you mean %q?)", e.Msg, e.Closest)
	}
	return e.Msg
}

// Closest returns the candidate nearest to name by edit distance, or ""
// when none is near enough to be a plausible misspelling.
func Closest(name string, candidates []string) string {
	name = strings.ToLower(name)
	best, bestD := "", len(name)/3+2
	for _, c := range candidates {
		if d := editDistance(name, strings.ToLower(c)); d < bestD || (d == bestD && best != "" && c < best) {
			best, bestD = c, d
		}
	}
	return best
}

// editDistance is Damerau-Levenshtein's optimal string alignment distance:
// a swap of two neighbours counts as one edit, as people mistype.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev2 := make([]int, len(rb)+1)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(rb)]
}

// Registry holds the engines dbrig knows, built explicitly in main.
type Registry struct{ engines map[string]Engine }

// NewRegistry makes a registry of the given engines.
func NewRegistry(engines ...Engine) *Registry {
	r := &Registry{engines: map[string]Engine{}}
	for _, e := range engines {
		r.engines[e.Name()] = e
	}
	return r
}

// Lookup finds an engine by name.
func (r *Registry) Lookup(name string) (Engine, bool) {
	if r == nil {
		return nil, false
	}
	e, ok := r.engines[name]
	return e, ok
}

// Names lists the engines, sorted.
func (r *Registry) Names() []string {
	if r == nil {
		return nil
	}
	return slices.Sorted(maps.Keys(r.engines))
}

// ErrUnknownScheme is returned by ParseTarget for a URI no engine reads.
var ErrUnknownScheme = errors.New("unknown connection scheme")

// KeywordReader is an optional ability of an Engine: its ParseURI also
// reads a connection string without a scheme, such as PostgreSQL's
// keyword/value form ("host=/var/run/postgresql user=app dbname=app"),
// which people copy from their tools' configuration.
type KeywordReader interface {
	// ReadsKeywords reports whether s (which has no "scheme://") is in
	// the engine's keyword form.
	ReadsKeywords(s string) bool
}

// SocketHinter is an optional ability of an Engine: an example of a
// connection string that reaches a server through its unix socket, for
// the message that tells a user how to measure a target's socket.
type SocketHinter interface {
	SocketExample() string
}

// SocketExample is the engine's example of a login through a unix socket,
// or a sentence saying to give one.
func SocketExample(e Engine) string {
	if h, ok := e.(SocketHinter); ok {
		return h.SocketExample()
	}
	return "a connection string that names the server's unix socket"
}

// ParseTarget reads a user's connection string with the engine its scheme
// names (postgres://, postgresql://, mysql://, mariadb://), or, without a
// scheme, with the engine whose keyword form it is.
func (r *Registry) ParseTarget(uri string) (Engine, Conn, error) {
	scheme, rest, ok := strings.Cut(uri, "://")
	if ok {
		scheme = strings.ToLower(scheme)
		uri = scheme + "://" + rest // drivers read schemes in lower case only
	}
	for _, name := range r.Names() {
		e := r.engines[name]
		kw, reads := e.(KeywordReader)
		if (ok && slices.Contains(e.Schemes(), scheme)) || (!ok && reads && kw.ReadsKeywords(uri)) {
			c, err := e.ParseURI(uri)
			return e, c, err
		}
	}
	var schemes, keywords []string
	for _, name := range r.Names() {
		for _, s := range r.engines[name].Schemes() {
			schemes = append(schemes, s+"://")
		}
		if _, reads := r.engines[name].(KeywordReader); reads {
			keywords = append(keywords, r.engines[name].Title())
		}
	}
	sort.Strings(schemes)
	want := "a URI starting with one of " + strings.Join(schemes, ", ")
	if len(keywords) > 0 {
		want += ", or " + strings.Join(keywords, " or ") + "'s keyword/value form (host=... port=... user=... dbname=...)"
	}
	// The string is not echoed: it did not parse, so no part of it can be
	// told safe from a password.
	if why := Malformation(uri); why != "" {
		return nil, Conn{}, fmt.Errorf("%w: %s; want %s", ErrUnknownScheme, why, want)
	}
	return nil, Conn{}, fmt.Errorf("%w: want %s", ErrUnknownScheme, want)
}

// ParseCPUList reads a Linux CPU list such as "0", "0-1" or "0,2-3".
func ParseCPUList(s string) ([]int, error) {
	var cpus []int
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		lo, hi, isRange := strings.Cut(part, "-")
		a, err1 := strconv.Atoi(lo)
		b := a
		var err2 error
		if isRange {
			b, err2 = strconv.Atoi(hi)
		}
		if err1 != nil || err2 != nil || a < 0 || b < a || b > 4095 {
			return nil, fmt.Errorf("CPU list %q: want numbers and ranges such as \"0\", \"0-1\" or \"0,2-3\"", s)
		}
		for c := a; c <= b; c++ {
			cpus = append(cpus, c)
		}
	}
	return cpus, nil
}

// CheckCPUs parses a CPU list and checks that every CPU exists here.
func CheckCPUs(s string) ([]int, error) {
	cpus, err := ParseCPUList(s)
	if err != nil {
		return nil, err
	}
	for _, c := range cpus {
		if c >= runtime.NumCPU() {
			return nil, fmt.Errorf("CPU %d of list %q does not exist on this machine (it has %d: 0-%d)", c, s, runtime.NumCPU(), runtime.NumCPU()-1)
		}
	}
	return cpus, nil
}
