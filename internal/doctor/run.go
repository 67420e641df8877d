package doctor

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// SchemaVersion names the JSON report's format; it changes only when a
// field is removed or changes meaning.
const SchemaVersion = "dbrig.doctor/v1"

// Report is the outcome of one dbrig doctor run.
type Report struct {
	Schema string `json:"schema"`
	// Status is the worst status of any check: fail, warn or pass.
	Status Status `json:"status"`
	// ExitCode is what dbrig doctor exits with: 1 when any check failed
	// (an unreachable host included), else 0.
	ExitCode int          `json:"exit_code"`
	Links    []Link       `json:"links"`
	Hosts    []HostReport `json:"hosts"`
	// Fleet is set when more than one host was checked.
	Fleet *Fleet `json:"fleet,omitempty"`
}

// HostReport is every check of one host.
type HostReport struct {
	// Name is the host as the user gave it ("local", "root@db1:22", a
	// snapshot file, or "database postgres://..." for a remote --db).
	Name string `json:"host"`
	// Hostname, Kernel, CPUs and MemoryBytes are what the host says of
	// itself (empty when unreachable).
	Hostname    string `json:"hostname,omitempty"`
	Kernel      string `json:"kernel,omitempty"`
	CPUs        int    `json:"cpus,omitempty"`
	MemoryBytes int64  `json:"memory_bytes,omitempty"`
	// Reachable is false when the host could not be read (ssh failed);
	// always true for this host, snapshots and database entries (a
	// database that does not answer is a failed db.connect row).
	Reachable bool     `json:"reachable"`
	Error     string   `json:"error,omitempty"`
	ElapsedMS int64    `json:"elapsed_ms"`
	Status    Status   `json:"status"`
	Counts    Counts   `json:"counts"`
	Checks    []Result `json:"checks"`

	mtuIface string // the interface compared across hosts, and its MTU
	mtu      int64
	dbOnly   bool // the entry of a database on another host: no host sections
}

// Counts is the number of checks of each status.
type Counts struct {
	Pass int `json:"pass"`
	Warn int `json:"warn"`
	Fail int `json:"fail"`
	Info int `json:"info"`
	Skip int `json:"skip"`
}

func (c *Counts) add(s Status) {
	switch s {
	case Pass:
		c.Pass++
	case Warn:
		c.Warn++
	case Fail:
		c.Fail++
	case Info:
		c.Info++
	default:
		c.Skip++
	}
}

// Fleet sums up several hosts: which host fails which check, and the checks
// that compare hosts with each other.
type Fleet struct {
	Hosts   []FleetHost  `json:"hosts"`
	ByCheck []FleetCheck `json:"by_check"`
	// Checks compare hosts with each other (net.mtu across hosts).
	Checks []Result `json:"checks"`
}

// FleetHost is one host's line in the fleet summary.
type FleetHost struct {
	Host      string   `json:"host"`
	Status    Status   `json:"status"`
	Reachable bool     `json:"reachable"`
	Failed    []string `json:"failed"` // "id subject" of each failed check
	Warned    []string `json:"warned"`
}

// FleetCheck lists the hosts where one check failed or warned.
type FleetCheck struct {
	ID       string   `json:"id"`
	FailedOn []string `json:"failed_on"`
	WarnedOn []string `json:"warned_on"`
}

// Options configure a run.
type Options struct {
	Links []Link
	// DB, when set, adds the database checks: to the local host's report
	// when this host is checked, else as an entry of its own.
	DB *Database
	// Parallel is how many hosts are checked at once (default 8).
	Parallel int
	// Timeout bounds each host (and the database connection); default 20 s.
	Timeout time.Duration
}

// Host is one host to check and how to read it.
type Host struct {
	Name    string
	local   bool
	remote  bool
	collect func(ctx context.Context, timeout time.Duration) (Source, error)
	// tryCmd is a command that shows why the host is unreachable.
	tryCmd string
}

// LocalHost checks this machine, reading sysfs and /proc under root ("/").
func LocalHost(root string) Host {
	if root == "" {
		root = "/"
	}
	src := DirSource{Root: root}
	return Host{Name: "local", local: root == "/",
		collect: func(context.Context, time.Duration) (Source, error) { return src, nil }}
}

// SnapshotHost checks a snapshot saved earlier (the collector's output).
func SnapshotHost(name string, s *Snapshot) Host {
	return Host{Name: name, collect: func(context.Context, time.Duration) (Source, error) { return s, nil }}
}

// RemoteHost checks t over ssh.
func RemoteHost(t Target, ssh SSH) Host {
	try := []string{"ssh", "-o", "BatchMode=yes"}
	if ssh.ConfigFile != "" {
		try = append(try, "-F", ssh.ConfigFile)
	}
	for _, o := range ssh.Options {
		try = append(try, "-o", o)
	}
	if t.Port != 0 {
		try = append(try, "-p", strconv.Itoa(t.Port))
	}
	if t.User != "" {
		try = append(try, "-l", t.User)
	}
	try = append(try, t.Host, "true")
	return Host{Name: t.String(), remote: true, tryCmd: strings.Join(try, " "), collect: func(ctx context.Context, timeout time.Duration) (Source, error) {
		s, err := ssh.Collect(ctx, t, timeout)
		if err != nil {
			return nil, err // not s: a nil *Snapshot in a Source is not nil
		}
		return s, nil
	}}
}

// Run checks every host, Parallel at a time, and never fails as a whole: a
// host that cannot be read is a failed host.reachable row.
func Run(ctx context.Context, hosts []Host, o Options) *Report {
	if o.Parallel <= 0 {
		o.Parallel = 8
	}
	if o.Timeout <= 0 {
		o.Timeout = 20 * time.Second
	}
	rep := &Report{Schema: SchemaVersion, Links: o.Links, Hosts: make([]HostReport, len(hosts))}
	if rep.Links == nil {
		rep.Links = []Link{}
	}
	dbLocal := -1
	if o.DB != nil {
		for i, h := range hosts {
			if h.local {
				dbLocal = i
				break
			}
		}
	}
	sem := make(chan struct{}, o.Parallel)
	var wg sync.WaitGroup
	for i, h := range hosts {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			var db *Database
			if i == dbLocal {
				db = o.DB
			}
			rep.Hosts[i] = checkHost(ctx, h, o, db)
		})
	}
	wg.Wait()
	if o.DB != nil && dbLocal < 0 {
		start := time.Now()
		res, _ := checkDatabase(ctx, o.DB, o.Timeout, nil)
		rep.Hosts = append(rep.Hosts, finish(HostReport{Name: "database " + o.DB.String(), Reachable: true, dbOnly: true}, res, start))
	}
	if len(rep.Hosts) > 1 {
		rep.Fleet = fleetSummary(rep.Hosts, hostsMTU(rep.Hosts))
	}
	rep.Status = Pass
	for _, h := range rep.Hosts {
		if h.Status.rank() < rep.Status.rank() {
			rep.Status = h.Status
		}
	}
	if rep.Fleet != nil {
		for _, c := range rep.Fleet.Checks {
			if c.Status.rank() < rep.Status.rank() {
				rep.Status = c.Status
			}
		}
	}
	if rep.Status == Fail {
		rep.ExitCode = 1
	}
	return rep
}

// checkHost runs every check on one host.
func checkHost(ctx context.Context, h Host, o Options, db *Database) HostReport {
	start := time.Now()
	hr := HostReport{Name: h.Name}
	src, err := h.collect(ctx, o.Timeout)
	if err != nil {
		hr.Error = err.Error()
		r := result("host.reachable", "", Fail, err.Error(), "the collector's output over ssh").
			withFix("Check that '" + h.tryCmd + "' works from here: the host's name and port, your key (ssh-agent or " +
				"IdentityFile), its known_hosts entry, that the account may log in, and that it has a POSIX sh.")
		return finish(hr, []Result{r}, start)
	}
	hr.Reachable = true
	hs := readHost(src)
	hr.Hostname, hr.Kernel, hr.CPUs, hr.MemoryBytes = hs.hostname, hs.kernel, hs.cpu.count, hs.memTotal
	var res []Result
	if h.remote {
		res = append(res, result("host.reachable", "", Pass, fmt.Sprintf("collected over ssh in %s", time.Since(start).Round(time.Millisecond)), ""))
	}
	var dbRes []Result
	marks := map[string][]string{}
	if db != nil {
		dbRes, marks = checkDatabase(ctx, db, o.Timeout, hs)
	}
	res = append(res, checkDisks(hs, marks)...)
	res = append(res, checkNetwork(hs)...)
	res = append(res, checkTCP(hs, o.Links)...)
	res = append(res, checkCPU(hs)...)
	res = append(res, dbRes...)
	hr.mtuIface, hr.mtu = hs.primaryMTU()
	return finish(hr, res, start)
}

// finish fills in the counts, the status and the time taken.
func finish(hr HostReport, res []Result, start time.Time) HostReport {
	hr.Checks = res
	hr.Status = Pass
	for _, r := range res {
		hr.Counts.add(r.Status)
		if r.Status.rank() < hr.Status.rank() && (r.Status == Fail || r.Status == Warn) {
			hr.Status = r.Status
		}
	}
	hr.ElapsedMS = time.Since(start).Milliseconds()
	return hr
}

// hostsMTU compares the MTU of each host's main interface.
func hostsMTU(hosts []HostReport) []Result {
	var parts []string
	values := map[string]any{}
	var distinct []int64
	for _, h := range hosts {
		if h.mtu == 0 {
			continue
		}
		parts = append(parts, fmt.Sprintf("%s %s %d", h.Name, h.mtuIface, h.mtu))
		values[h.Name] = h.mtu
		if !slices.Contains(distinct, h.mtu) {
			distinct = append(distinct, h.mtu)
		}
	}
	if len(parts) < 2 {
		return nil
	}
	r := result("net.mtu", "fleet", Pass, "MTU "+strings.Join(parts, ", "), "one MTU on every host of the database's path").with("mtu", values)
	if len(distinct) > 1 {
		r.Status = Warn
		r = r.withFix("Hosts that exchange database traffic should use one MTU end to end (and the switches between them): " +
			"set it with ip link set dev IFACE mtu N on the odd hosts, or make sure path MTU discovery works.")
	}
	return []Result{r}
}

func fleetSummary(hosts []HostReport, checks []Result) *Fleet {
	f := &Fleet{Checks: checks}
	byID := map[string]*FleetCheck{}
	var order []string
	note := func(id, host string, s Status) {
		fc, ok := byID[id]
		if !ok {
			fc = &FleetCheck{ID: id, FailedOn: []string{}, WarnedOn: []string{}}
			byID[id] = fc
			order = append(order, id)
		}
		list := &fc.WarnedOn
		if s == Fail {
			list = &fc.FailedOn
		}
		if !slices.Contains(*list, host) {
			*list = append(*list, host)
		}
	}
	for _, h := range hosts {
		fh := FleetHost{Host: h.Name, Status: h.Status, Reachable: h.Reachable, Failed: []string{}, Warned: []string{}}
		for _, r := range h.Checks {
			label := strings.TrimSpace(r.ID + " " + r.Subject)
			switch r.Status {
			case Fail:
				fh.Failed = append(fh.Failed, label)
				note(r.ID, h.Name, Fail)
			case Warn:
				fh.Warned = append(fh.Warned, label)
				note(r.ID, h.Name, Warn)
			}
		}
		f.Hosts = append(f.Hosts, fh)
	}
	for _, r := range checks {
		if r.Status == Fail || r.Status == Warn {
			note(r.ID+" (fleet)", "fleet", r.Status)
		}
	}
	catalogOrder := func(id string) int {
		id = strings.TrimSuffix(id, " (fleet)")
		return slices.IndexFunc(Catalog, func(c CheckInfo) bool { return c.ID == id })
	}
	slices.SortStableFunc(order, func(a, b string) int { return catalogOrder(a) - catalogOrder(b) })
	for _, id := range order {
		f.ByCheck = append(f.ByCheck, *byID[id])
	}
	if f.ByCheck == nil {
		f.ByCheck = []FleetCheck{}
	}
	return f
}
