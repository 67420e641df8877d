package doctor

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/dbrig/dbrig/internal/engine"
	"github.com/dbrig/dbrig/internal/engine/postgres"
)

// Database is a PostgreSQL server given with --db.
type Database struct {
	uri     string
	display string // the URI without its password
	pgcfg   *pgx.ConnConfig
}

// ParseDatabase checks a connection URI or keyword/value string. The
// password, when the string has one, never appears in a message or a
// report; better, leave it out and let PGPASSWORD or ~/.pgpass supply it.
func ParseDatabase(uri string) (*Database, error) {
	ci, err := postgres.ParseConnInfo(uri)
	if err != nil {
		return nil, fmt.Errorf("--db: %w", err)
	}
	cfg, err := pgx.ParseConfig(uri)
	if err != nil {
		// pgx's error quotes the string; ParseConnInfo said what is wrong.
		return nil, fmt.Errorf("--db: connection string %s: not a connection string PostgreSQL reads", engine.RedactUnparsed(uri))
	}
	return &Database{uri: uri, display: ci.String(), pgcfg: cfg}, nil
}

// String is the server's address without a password.
func (d *Database) String() string { return d.display }

// Local reports whether the server runs on this host: a unix socket or a
// loopback address. Only then can dbrig say which partition holds its files.
func (d *Database) Local() bool {
	h := d.pgcfg.Host
	if strings.HasPrefix(h, "/") || h == "localhost" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// setting is one row of pg_settings.
type setting struct{ value, unit string }

// pgSettings reads every setting the checks need in one query.
type pgSettings map[string]setting

func (s pgSettings) str(name string) (string, bool) {
	v, ok := s[name]
	return v.value, ok
}

func (s pgSettings) int(name string) (int64, bool) {
	v, ok := s[name]
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(v.value, 10, 64)
	return n, err == nil
}

// bytes converts a memory setting to bytes using its unit ("8kB", "kB", "MB").
func (s pgSettings) bytes(name string) (int64, bool) {
	n, ok := s.int(name)
	if !ok {
		return 0, false
	}
	mult := map[string]int64{"": 1, "B": 1, "kB": 1 << 10, "8kB": 8 << 10, "MB": 1 << 20, "GB": 1 << 30, "TB": 1 << 40}
	m, ok := mult[s[name].unit]
	if !ok {
		return 0, false
	}
	return n * m, true
}

// redactErr removes the password from a driver error, in case a message
// ever quotes the connection string.
func (d *Database) redactErr(err error) string {
	msg := err.Error()
	if pw := d.pgcfg.Password; pw != "" {
		msg = strings.ReplaceAll(msg, pw, "xxxxx")
	}
	return msg
}

// checkDatabase connects and judges the settings the studies show matter.
// h is this host when the server runs on it (nil otherwise): then the data
// directory and the WAL are placed on their partitions and marks gets, per
// major:minor, the words to add to those disks' rows.
func checkDatabase(ctx context.Context, d *Database, timeout time.Duration, h *host) (out []Result, marks map[string][]string) {
	marks = map[string][]string{}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cfg := d.pgcfg.Copy()
	cfg.ConnectTimeout = timeout
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		r := result("db.connect", "", Fail, "cannot connect to "+d.display+": "+d.redactErr(err), "the server answers").
			withFix("Check that the server runs and listens there (pg_isready -h HOST -p PORT), that pg_hba.conf admits this " +
				"client, and the credentials (PGPASSWORD or ~/.pgpass rather than a password in the URI).")
		return []Result{r}, marks
	}
	defer conn.Close(context.Background())
	rows, err := conn.Query(ctx, "SELECT name, setting, coalesce(unit, '') FROM pg_settings")
	settings := pgSettings{}
	if err == nil {
		var name, value, unit string
		_, err = pgx.ForEachRow(rows, []any{&name, &value, &unit}, func() error {
			settings[name] = setting{value, unit}
			return nil
		})
	}
	if err != nil {
		return []Result{result("db.connect", "", Fail, "connected to "+d.display+", but reading pg_settings failed: "+d.redactErr(err), "pg_settings readable").
			withFix("Connect as a role that may read pg_settings (any login can; check for a broken connection or a proxy).")}, marks
	}
	via := "TCP"
	if strings.HasPrefix(cfg.Host, "/") {
		via = "a unix socket"
	}
	out = append(out, result("db.connect", "", Pass, "connected to "+d.display+" over "+via, "the server answers"))
	version, _ := settings.str("server_version")
	out = append(out, result("db.version", "", Info, "PostgreSQL "+version, "").with("server_version", version))

	out = append(out, d.placeFiles(settings, h, marks)...)
	out = append(out, checkReplication(settings)...)
	out = append(out, checkResources(settings, h)...)
	return out, marks
}

// placeFiles finds the partitions of the data directory and of pg_wal.
func (d *Database) placeFiles(s pgSettings, h *host, marks map[string][]string) []Result {
	walDev := result("db.wal_device", "", Skip, "", "pg_wal on a different disk than the data directory")
	dataDir, ok := s.str("data_directory")
	switch {
	case !ok:
		walDev.Observed = "data_directory is not visible to this login (needs superuser or pg_read_all_settings)"
		return []Result{walDev}
	case h == nil || !d.Local():
		walDev.Observed = "the server runs on " + d.pgcfg.Host + ": run dbrig doctor --db on that host to place its files"
		return []Result{result("db.data_directory", "", Info, dataDir, ""), walDev}
	}
	data, err := filepath.EvalSymlinks(dataDir)
	if err != nil {
		walDev.Observed = "cannot resolve the data directory here: " + err.Error()
		return []Result{result("db.data_directory", "", Info, dataDir, ""), walDev}
	}
	walName := "pg_wal"
	if _, err := os.Lstat(filepath.Join(data, walName)); err != nil {
		walName = "pg_xlog" // PostgreSQL 9.6 and older
	}
	wal, err := filepath.EvalSymlinks(filepath.Join(data, walName))
	if err != nil {
		walDev.Observed = "cannot resolve " + walName + " here: " + err.Error()
		return []Result{result("db.data_directory", "", Info, dataDir, ""), walDev}
	}
	dp, okD := h.place(data)
	wp, okW := h.place(wal)
	if !okD || !okW {
		walDev.Observed = "no mount found for " + data + " or " + wal
		return []Result{result("db.data_directory", "", Info, dataDir, ""), walDev}
	}
	dirObs := fmt.Sprintf("data %s: %s; WAL %s: %s", dataDir, dp.words(), wal, wp.words())
	dirRow := result("db.data_directory", "", Info, dirObs, "").
		with("data_directory", dataDir, "data_mount", dp.mount.point, "data_block", dp.block, "wal_directory", wal, "wal_mount", wp.mount.point, "wal_block", wp.block)
	if dp.mount.dev == wp.mount.dev {
		marks[dp.mount.dev] = append(marks[dp.mount.dev], "holds the PostgreSQL data directory and its WAL")
	} else {
		marks[dp.mount.dev] = append(marks[dp.mount.dev], "holds the PostgreSQL data directory")
		marks[wp.mount.dev] = append(marks[wp.mount.dev], "holds the PostgreSQL WAL")
	}
	sameDisk := dp.disk != nil && wp.disk != nil && dp.disk.name == wp.disk.name
	walDev = walDev.with("same_file_system", dp.mount.dev == wp.mount.dev, "same_disk", sameDisk)
	switch {
	case dp.mount.dev == wp.mount.dev || sameDisk:
		disk := dp.mount.source
		if dp.disk != nil {
			disk = dp.disk.name
		}
		walDev.Status = Warn
		walDev.Observed = "WAL and data on the same disk, " + disk
		if dp.mount.dev == wp.mount.dev {
			walDev.Observed += " (the same file system, " + dp.mount.point + ")"
		}
		walDev = walDev.withFix("Move pg_wal to a disk of its own: stop the server, move " + wal + " to a file system on another " +
			"disk, leave a symbolic link named pg_wal in its place, start the server (for a new cluster: initdb --waldir).")
	case dp.disk == nil || wp.disk == nil:
		walDev.Status = Info
		walDev.Observed = "WAL on another file system (" + wp.mount.point + ") than the data (" + dp.mount.point + "); their disks are not known"
	default:
		walDev.Status = Pass
		walDev.Observed = "WAL on " + wp.disk.name + ", data on " + dp.disk.name
	}
	return []Result{dirRow, walDev}
}

func checkReplication(s pgSettings) []Result {
	var out []Result
	level, _ := s.str("wal_level")
	r := result("db.wal_level", "", Pass, "wal_level = "+level, "logical").with("wal_level", level)
	switch level {
	case "logical":
	case "replica", "archive", "hot_standby":
		r.Status = Warn
		r.Observed += ": physical streaming only, no logical replication"
		r = r.withFix("Set wal_level = logical in postgresql.conf and restart the server (it writes somewhat more WAL).")
	default:
		r.Status = Fail
		r.Observed += ": no replication at all"
		r = r.withFix("Set wal_level = logical in postgresql.conf and restart the server.")
	}
	out = append(out, r)

	for _, name := range []string{"max_wal_senders", "max_replication_slots"} {
		n, ok := s.int(name)
		r := result("db."+name, "", Pass, fmt.Sprintf("%s = %d", name, n), "at least one per standby or subscription (default 10)").with(name, n)
		switch {
		case !ok:
			r.Status, r.Observed = Skip, name+" not reported by this server"
		case n == 0:
			r.Status = Fail
			r = r.withFix(fmt.Sprintf("Set %s = 10 in postgresql.conf and restart the server.", name))
		}
		out = append(out, r)
	}

	reserved, _ := s.int("superuser_reserved_connections")
	maxConn, _ := s.int("max_connections")
	obs := fmt.Sprintf("superuser_reserved_connections = %d of max_connections = %d", reserved, maxConn)
	if v, ok := s.int("reserved_connections"); ok && v > 0 {
		obs += fmt.Sprintf(", reserved_connections = %d", v)
	}
	r = result("db.superuser_reserved_connections", "", Pass, obs, "at least 1 (default 3)").
		with("superuser_reserved_connections", reserved, "max_connections", maxConn)
	if reserved == 0 {
		r.Status = Fail
		r = r.withFix("Set superuser_reserved_connections = 3 (restart), and keep monitoring logins superuser or in " +
			"pg_use_reserved_connections (PostgreSQL 16+), so they get in when the workload holds every connection.")
	}
	return append(out, r)
}

func checkResources(s pgSettings, h *host) []Result {
	cores := 0
	var mem int64
	if h != nil {
		cores, mem = h.cpu.count, h.memTotal
	}
	return []Result{
		checkParallelWorkers(s, cores),
		checkSharedBuffers(s, mem),
		checkPrefetching(s, h),
		checkSynchronousCommit(s),
		checkKeepalives(s, h),
	}
}

// checkParallelWorkers sets parallel query against the cores (0: unknown).
func checkParallelWorkers(s pgSettings, cores int) Result {
	perGather, _ := s.int("max_parallel_workers_per_gather")
	maxPar, hasMaxPar := s.int("max_parallel_workers")
	obs := fmt.Sprintf("max_parallel_workers_per_gather = %d", perGather)
	if hasMaxPar {
		obs += fmt.Sprintf(", max_parallel_workers = %d", maxPar)
	}
	expected := "1 to the number of cores"
	if cores > 0 {
		obs += fmt.Sprintf(", %d cores", cores)
		expected = fmt.Sprintf("1 to %d (the cores)", cores)
	}
	r := result("db.max_parallel_workers_per_gather", "", Pass, obs, expected).
		with("max_parallel_workers_per_gather", perGather, "max_parallel_workers", maxPar, "cores", cores)
	switch {
	case perGather == 0:
		r.Status = Warn
		r = r.withFix("Parallel query is off; set max_parallel_workers_per_gather to half the cores or more (reload) for large queries.")
	case cores > 0 && perGather > int64(cores):
		r.Status = Warn
		r = r.withFix(fmt.Sprintf("%d workers per query for %d cores only add switching: set max_parallel_workers_per_gather = %d (reload).",
			perGather, cores, cores))
	case hasMaxPar && perGather > maxPar:
		r.Status = Warn
		r = r.withFix(fmt.Sprintf("max_parallel_workers (%d) caps the workers of all queries below one query's %d: raise it (reload).", maxPar, perGather))
	}
	return r
}

// checkSharedBuffers sets shared_buffers against the memory (0: unknown).
func checkSharedBuffers(s pgSettings, mem int64) Result {
	sb, _ := s.bytes("shared_buffers")
	obs := "shared_buffers = " + humanBytes(sb)
	target := int64(1 << 30)
	if mem > 0 {
		obs += fmt.Sprintf(" (%.1f %% of %s RAM)", float64(sb)*100/float64(mem), humanBytes(mem))
		target = max(target, mem/4/(1<<30)*(1<<30))
	}
	r := result("db.shared_buffers", "", Pass, obs, "at least 1 GiB per instance, about 25 % of RAM, under 50 %").
		with("shared_buffers_bytes", sb, "memory_bytes", mem)
	switch {
	case mem > 0 && sb > mem/2:
		r.Status = Warn
		r = r.withFix(fmt.Sprintf("More than half the memory leaves too little page cache and work memory: set shared_buffers = '%s' (restart).", sizeGB(target)))
	case sb < 1<<30 && (mem == 0 || mem >= 4<<30):
		r.Status = Warn
		r = r.withFix(fmt.Sprintf("Set shared_buffers = '%s' (about 25 %% of RAM; divide among the instances when several share the host), then restart.", sizeGB(target)))
	}
	return r
}

// checkPrefetching sets prefetching against the data's disk, when the
// server runs on this host.
func checkPrefetching(s pgSettings, h *host) Result {
	eio, _ := s.int("effective_io_concurrency")
	r := result("db.effective_io_concurrency", "", Pass, fmt.Sprintf("effective_io_concurrency = %d", eio), "above 0; around 200 on SSDs").
		with("effective_io_concurrency", eio)
	ssd := false
	if h != nil {
		if dataDir, ok := s.str("data_directory"); ok {
			if p, err := filepath.EvalSymlinks(dataDir); err == nil {
				if pl, ok := h.place(p); ok && pl.disk != nil {
					ssd = !pl.disk.rotational
					kind := "rotational"
					if ssd {
						kind = "an SSD"
					}
					r.Observed += "; data on " + pl.disk.name + ", " + kind
				}
			}
		}
	}
	switch {
	case eio == 0:
		r.Status = Warn
		r = r.withFix("Prefetching is off: set effective_io_concurrency = 200 on SSDs, or the number of spindles on a disk array (reload).")
	case ssd && eio <= 16:
		r.Status = Warn
		r = r.withFix("The data is on an SSD, which serves many reads at once: set effective_io_concurrency = 200 (reload).")
	}
	return r
}

// checkSynchronousCommit warns when commits are not durable.
func checkSynchronousCommit(s pgSettings) Result {
	sc, _ := s.str("synchronous_commit")
	standbys, _ := s.str("synchronous_standby_names")
	obs := "synchronous_commit = " + sc
	if standbys != "" {
		obs += ", synchronous_standby_names = '" + standbys + "': each commit waits for a standby"
	}
	r := result("db.synchronous_commit", "", Pass, obs, "on (or a remote_* level with standbys)").with("synchronous_commit", sc, "synchronous_standby_names", standbys)
	if sc == "off" {
		r.Status = Warn
		r = r.withFix("A crash loses the commits of the last moments (up to 3 x wal_writer_delay): set synchronous_commit = on " +
			"unless the loss is acceptable, and say it is off in any published measurement.")
	}
	return r
}

// checkKeepalives says how soon a dead peer is found. Over TCP the server
// shows the values in effect on this very connection (the kernel's when
// the settings are 0).
func checkKeepalives(s pgSettings, h *host) Result {
	idle, _ := s.int("tcp_keepalives_idle")
	intvl, _ := s.int("tcp_keepalives_interval")
	count, _ := s.int("tcp_keepalives_count")
	src := "the server"
	if idle == 0 && h != nil && h.tcp.keepaliveTime > 0 {
		idle, intvl, count, src = h.tcp.keepaliveTime, h.tcp.keepaliveIntvl, h.tcp.keepaliveProbes, "the kernel (net.ipv4.tcp_keepalive_*)"
	}
	r := result("db.tcp_keepalives", "", Pass, "", "a dead peer found within 10 minutes").
		with("tcp_keepalives_idle", idle, "tcp_keepalives_interval", intvl, "tcp_keepalives_count", count)
	if idle == 0 {
		r.Status, r.Observed = Skip, "keepalive values unknown: connected over a unix socket to a server on another host"
		return r
	}
	detect := time.Duration(idle+intvl*count) * time.Second
	r.Observed = fmt.Sprintf("idle %d s, interval %d s, count %d (from %s): a dead peer found after %s", idle, intvl, count, src, detect)
	if detect > 10*time.Minute {
		r.Status = Warn
		r = r.withFix("Set tcp_keepalives_idle = 60, tcp_keepalives_interval = 10, tcp_keepalives_count = 6 (reload): a dead " +
			"subscriber or client is then found within 2 minutes; tcp_user_timeout = 60000 also bounds unacknowledged data.")
	}
	return r
}

// sizeGB writes a size for postgresql.conf.
func sizeGB(n int64) string {
	if n%(1<<30) == 0 {
		return strconv.FormatInt(n>>30, 10) + "GB"
	}
	return strconv.FormatInt(n>>20, 10) + "MB"
}
