package doctor

// Status is the verdict of one check.
type Status string

// The verdicts, from worst to best. Only Fail makes dbrig doctor exit 1.
const (
	Fail Status = "fail" // a fault the studies show costs performance or safety
	Warn Status = "warn" // likely to cost something; worth a look
	Pass Status = "pass" // as expected
	Info Status = "info" // a fact to know, no verdict
	Skip Status = "skip" // could not be checked here (the reason is in Observed)
)

// rank orders statuses from worst (0) to least important.
func (s Status) rank() int {
	switch s {
	case Fail:
		return 0
	case Warn:
		return 1
	case Pass:
		return 2
	case Info:
		return 3
	}
	return 4
}

// Section groups checks in the report, in this order.
type Section string

// The sections of a host's report.
const (
	SectionHost     Section = "host"
	SectionDisks    Section = "disks"
	SectionNetwork  Section = "network"
	SectionTCP      Section = "tcp"
	SectionCPU      Section = "cpu"
	SectionDatabase Section = "database"
)

// Sections lists the sections in report order.
var Sections = []Section{SectionHost, SectionDisks, SectionNetwork, SectionTCP, SectionCPU, SectionDatabase}

// Title is the section's heading in the text report.
func (s Section) Title() string {
	switch s {
	case SectionHost:
		return "HOST"
	case SectionDisks:
		return "DISKS"
	case SectionNetwork:
		return "NETWORK"
	case SectionTCP:
		return "TCP BUFFERS"
	case SectionCPU:
		return "CPU AND CLOCK"
	case SectionDatabase:
		return "DATABASE"
	}
	return string(s)
}

// Result is one check on one subject (a partition, an interface, a link, a
// setting). The JSON field names are part of dbrig's interface: see
// docs/doctor.md.
type Result struct {
	ID      string  `json:"id"`
	Section Section `json:"section"`
	// Subject is what was checked: "sda1", "eth0", "150ms:1gbit", a
	// setting's name; empty for host-wide checks.
	Subject  string `json:"subject,omitempty"`
	Status   Status `json:"status"`
	Observed string `json:"observed"`
	Expected string `json:"expected,omitempty"`
	// Why the check matters and Source, the study it comes from; both come
	// from the check's catalog entry.
	Why    string `json:"why,omitempty"`
	Source string `json:"source,omitempty"`
	// Fix says in words what to change, with the values, when the status
	// is fail or warn.
	Fix string `json:"fix,omitempty"`
	// Values holds the observed figures as numbers and booleans for
	// programs (offsets in bytes, rates in bit/s), keyed by snake_case names.
	Values map[string]any `json:"values,omitempty"`
}

// CheckInfo describes a check: its section, why it matters and its source.
type CheckInfo struct {
	ID      string
	Section Section
	Title   string
	Why     string
	Source  string
}

// Catalog lists every check dbrig doctor runs, in report order.
var Catalog = []CheckInfo{
	{ID: "host.reachable", Section: SectionHost, Title: "the host answers over ssh and runs the collector",
		Why:    "A fleet check that silently skips a host hides exactly the host that needs looking at.",
		Source: "seed 002 (Finding Disk Partition Offsets Made Easy: a wrapper that loops over a text file of server names, one per line)"},
	{ID: "disk.alignment", Section: SectionDisks, Title: "partition start offsets against 4 KiB, 64 KiB, 1 MiB, the physical block and the optimal I/O size",
		Why: "A partition that does not start on a boundary of the storage's blocks or stripe units makes I/Os straddle two units, " +
			"so the device reads or writes both: misalignment costs up to 40 % of I/O performance. Windows Server 2003 started " +
			"the first partition at sector 63 (32,256 bytes), which no 4 KiB or 64 KiB unit divides.",
		Source: "seed 002 (Finding Disk Partition Offsets Made Easy; up to 40 %), studies/engine-notes.md §1"},
	{ID: "net.link", Section: SectionNetwork, Title: "speed, duplex, MTU, carrier and driver of each interface",
		Why: "A half-duplex NIC facing a full-duplex switch port (a duplex mismatch) loses frames to late collisions; TCP recovers " +
			"them only after a retransmission timeout of 200 ms or more. An OLTP test expected above 5,000 tps ran at 800 tps, " +
			"with transactions of 200 ms to over 1,000 ms, until the server's NIC was set to full duplex.",
		Source: "seed 002 (Mismatched Network Duplex Setting can Sink Your OLTP Throughput), studies/transport-oltp.md"},
	{ID: "net.mtu", Section: SectionNetwork, Title: "one MTU on the interfaces (and hosts) that carry database traffic",
		Why: "Different MTUs on one path make large packets fragment, or vanish where path MTU discovery is blocked: " +
			"small queries work while replication and bulk transfers stall.",
		Source: "studies/engine-notes.md §1 (interfaces: speed, duplex, MTU)"},
	{ID: "tcp.buffers", Section: SectionTCP, Title: "TCP buffer maxima, window scaling, receive-buffer autotuning, congestion control",
		Why: "The kernel's buffer maxima bound the TCP window. Without window scaling the window stops at 64 KiB, as on " +
			"Windows Server 2003 in the seed, where pull replication over 77 ms took 174.87 minutes against 12.5 with " +
			"receive-window autotuning up to 16 MB.",
		Source: "seed 000 (Geo-Replication Performance Gains, receive window autotuning), studies/geo-replication.md"},
	{ID: "tcp.bdp", Section: SectionTCP, Title: "single-connection ceiling (buffer / RTT) against each declared link's bandwidth-delay product",
		Why: "One TCP connection carries at most its window per round trip: a 65,535-byte window gives about 5.24 Mbit/s " +
			"at 100 ms whatever the bandwidth. Replication streams over one connection, so a buffer smaller than the " +
			"bandwidth-delay product throttles it; the seed measured up to ~100x.",
		Source: "seed 000 (section 1.1, Receive Window Autotuning), studies/geo-replication.md, design/link-model.md"},
	{ID: "cpu.model", Section: SectionCPU, Title: "CPU model, count and maximum frequency",
		Why: "Row-by-row work runs on one core: its duration follows the core's maximum frequency, and a production " +
			"server is often slower per row than a desktop.",
		Source: "seed 004 (network latency and RBAR), studies/rbar-latency.md"},
	{ID: "cpu.governor", Section: SectionCPU, Title: "CPU frequency governor",
		Why: "A power-saving governor lowers the clock between bursts, and row-by-row work is a long series of short " +
			"bursts: it runs at the lower frequency.",
		Source: "seed 004 (duration against maximum frequency), studies/rbar-latency.md"},
	{ID: "cpu.virtual", Section: SectionCPU, Title: "physical or virtual machine",
		Why: "Virtual machines cost 5-10 % on a tight loop and up to ~30 % on a cursor, and a virtual client adds " +
			"~0.0025-0.03 ms per row: measurements on a VM are not comparable with physical ones.",
		Source: "seed 004, studies/rbar-latency.md"},
	{ID: "cpu.idle", Section: SectionCPU, Title: "how an idle CPU waits (a virtual machine's halt polling)",
		Why: "A round trip wakes an idle CPU at each hop (the client's, the server's, a proxy's). A guest that halts an " +
			"idle vCPU at once makes each wake-up a VM exit through the hypervisor: on dbrig's development VM a relay in a " +
			"process of its own added 114-165 µs a round trip so, and 28-90 µs with the guest polling 200 µs before it " +
			"halts. The seed found a virtualized client adding the same per-row time to row-by-row work over 1 Gbit/s " +
			"Ethernet and Infiniband alike, and put it down to virtualization, not the network.",
		Source: "seed 004 (a virtualized client's penalty per row), studies/rbar-latency.md, docs/link.md (the round trip apart)"},
	{ID: "clock.source", Section: SectionCPU, Title: "kernel clock source",
		Why: "Every per-row timing (EXPLAIN ANALYZE, dbrig's own timers) reads the clock; hpet and acpi_pm cost " +
			"microseconds per read where tsc costs nanoseconds, which distorts row-by-row measurements.",
		Source: "seed 004 (timing row-by-row work), studies/rbar-latency.md"},
	{ID: "db.connect", Section: SectionDatabase, Title: "the database given with --db answers",
		Why: "Every database check needs a connection; a database that does not answer is a failed check, not a " +
			"silent skip.", Source: "the database checks below, from seeds 000, 002 and 003, all read the server through this connection"},
	{ID: "db.version", Section: SectionDatabase, Title: "server version", Why: "Settings and defaults differ between versions.",
		Source: "the settings checks below (seeds 000, 002, 003) read their names and defaults for this version"},
	{ID: "db.data_directory", Section: SectionDatabase, Title: "which partition holds the data directory and the WAL",
		Why:    "Where the files live decides which of the disk checks above matter for this database.",
		Source: "seed 002 (partition offsets) and seed 003 (Disk Layout): the disk checks matter for the partitions that hold the data and the WAL"},
	{ID: "db.wal_device", Section: SectionDatabase, Title: "WAL on a device apart from the data",
		Why: "Separating transaction logs from data files on physical disks gave 10 % more throughput: the log's " +
			"sequential writes stop queueing behind the data's random I/O (and a lost data disk leaves the log).",
		Source: "seed 003 (Disk Layout: +10 %), studies/consolidation.md"},
	{ID: "db.wal_level", Section: SectionDatabase, Title: "wal_level allows logical replication",
		Why: "dbrig's geo-replication study replicates with publications and subscriptions, the analogue of the seed's " +
			"transactional replication; that needs wal_level = logical (replica allows only physical streaming, minimal " +
			"no replication at all).",
		Source: "seed 000, studies/geo-replication.md"},
	{ID: "db.max_wal_senders", Section: SectionDatabase, Title: "max_wal_senders",
		Why:    "Each standby or subscription holds one WAL sender; 0 forbids replication.",
		Source: "seed 000, studies/geo-replication.md"},
	{ID: "db.max_replication_slots", Section: SectionDatabase, Title: "max_replication_slots",
		Why:    "Each logical subscription needs a replication slot; 0 forbids logical replication.",
		Source: "seed 000, studies/geo-replication.md"},
	{ID: "db.superuser_reserved_connections", Section: SectionDatabase, Title: "connections reserved for an administrator",
		Why: "When a workload takes every connection, an administrator (and dbrig's own monitoring connection) must " +
			"still get in, as SQL Server's Dedicated Admin Connection allows.",
		Source: "seed 002 (Dedicated Admin Connection), studies/engine-notes.md §6"},
	{ID: "db.max_parallel_workers_per_gather", Section: SectionDatabase, Title: "parallel workers per query against the cores",
		Why: "TPC-H at scale 10 took 457 s at MAXDOP 1, 110 s at 4, 61 s at 8 and 39 s at 16 on 16 cores: large queries " +
			"scale with parallel workers, up to the number of cores.",
		Source: "seed 002 (Large Query Performance and Query Parallelism), studies/engine-notes.md §2"},
	{ID: "db.shared_buffers", Section: SectionDatabase, Title: "shared_buffers against memory",
		Why: "A floor of 1 GB of server memory per instance gave 25 % more throughput than default dynamic allocation; " +
			"too small a buffer pool turns cached reads into system calls, too large leaves no page cache.",
		Source: "seed 003 (memory configuration: +25 %), studies/consolidation.md"},
	{ID: "db.effective_io_concurrency", Section: SectionDatabase, Title: "effective_io_concurrency (prefetch depth)",
		Why: "Read-ahead turned a cold scan of 16 GB from 210 s into 80 s (reads of > 350 KB instead of 8 KB); " +
			"PostgreSQL's prefetching is driven by effective_io_concurrency, and 0 turns it off.",
		Source: "seed 002 (Some Data Points on Read-Ahead), studies/engine-notes.md §4"},
	{ID: "db.synchronous_commit", Section: SectionDatabase, Title: "synchronous_commit",
		Why: "synchronous_commit = off trades the last commits of a crash for throughput, the analogue of the seed's " +
			"bulk-logged recovery model (full reached 90 % of bulk-logged); with a synchronous standby every commit " +
			"also waits a round trip.",
		Source: "seed 003 (recovery model: 90 %), studies/consolidation.md"},
	{ID: "db.tcp_keepalives", Section: SectionDatabase, Title: "TCP keepalives on the server's connections",
		Why: "A subscriber or client connection that dies silently across a WAN, NAT or firewall holds its backend, its " +
			"WAL sender and its slot's WAL until TCP notices: with the kernel default that is over two hours.",
		Source: "seed 000 (replication across a WAN), studies/geo-replication.md"},
}

var catalogByID = func() map[string]CheckInfo {
	m := make(map[string]CheckInfo, len(Catalog))
	for _, c := range Catalog {
		m[c.ID] = c
	}
	return m
}()

// result starts a Result for check id with its catalog entry filled in.
func result(id, subject string, status Status, observed, expected string) Result {
	info, ok := catalogByID[id]
	if !ok {
		panic("doctor: check " + id + " is not in the catalog")
	}
	return Result{ID: id, Section: info.Section, Subject: subject, Status: status, Observed: observed,
		Expected: expected, Why: info.Why, Source: info.Source}
}

// withFix sets the fix (shown for fail and warn) and returns the result.
func (r Result) withFix(fix string) Result { r.Fix = fix; return r }

// with sets machine-readable values and returns the result.
func (r Result) with(kv ...any) Result {
	if r.Values == nil {
		r.Values = map[string]any{}
	}
	for i := 0; i+1 < len(kv); i += 2 {
		r.Values[kv[i].(string)] = kv[i+1]
	}
	return r
}
