package readahead

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/dbrig/dbrig/internal/blockdev"
	"github.com/dbrig/dbrig/internal/engine"
	"github.com/dbrig/dbrig/internal/topology"
	"github.com/dbrig/dbrig/internal/units"
	"github.com/dbrig/dbrig/internal/workload"
	"github.com/dbrig/dbrig/internal/workload/dbconn"
	"github.com/dbrig/dbrig/internal/workload/widetable"
)

// The read-ahead settings a point may ask for besides a size.
const (
	Default = "default" // the device's as the kernel made it; the engine's own as configured
	Minimal = "minimal" // 4 KiB: the kernel reads what a read call asks; the engine's own off
	Off     = "off"     // 0: the kernel reads one 4 KiB page at a time; the engine's own off
)

// minimalKB is the least read-ahead that still reads a whole read call at
// once: with 0 the kernel splits an 8 KiB read into two 4 KiB pages.
const minimalKB = 4

// Kind registers the workload.
func Kind() workload.Kind {
	return workload.Kind{
		Name: "read-ahead",
		Doc:  "a cold full scan of seed 002's wide table on a loop device dbrig makes, with its read-ahead (and the engine's) at a setting",
		Params: []workload.ParamSpec{
			{Name: "rows", Type: workload.IntParam, Default: int64(2_000_000),
				Doc: "rows of the table (the seed: 2,000,000, about 16 GB)",
				Min: 2, MinWhy: widetable.MinRowsWhy, Max: widetable.MaxRows, Why: widetable.MaxRowsWhy},
			{Name: "read_ahead", Type: workload.StringParam, Default: Default,
				Doc:   `"default": the loop device's read-ahead as the kernel set it, and the engine's own prefetch as configured; "minimal": 4 KiB (the kernel reads what a read call asks) and InnoDB's read-ahead off; "off": 0 and InnoDB's off; or a size ("128KiB") for the device alone`,
				Check: checkReadAhead},
			{Name: "device_size", Type: workload.SizeParam, AllowZero: true, Default: int64(0),
				Doc: "the loop device's size (0: from the rows, with room for the indexes)",
				Max: maxDevice, Why: "the loop device's file lives in TMPDIR: 1 TiB holds the largest table with its indexes"},
			{Name: "calibration_bytes", Type: workload.SizeParam, Default: int64(256 << 20),
				Doc: "the most the plain read that measures the device's throughput reads of the table's file (it also stops after 5 s)",
				Max: maxDevice, Why: "no more than the largest loop device holds"},
			{Name: "instance", Type: workload.StringParam, Default: "db", Doc: "the instance that holds the table"},
		},
		New: newWorkload,
		PrepareKey: func(p workload.Params) string {
			return fmt.Sprintf("read-ahead rows=%d size=%d instance=%s", p.Int("rows"), p.Int("device_size"), p.String("instance"))
		},
		Model:   Model,
		Predict: Predict,
		Probe:   Probe,
		Metrics: metricSpecs(),
	}
}

func metricSpecs() []workload.MetricSpec {
	return []workload.MetricSpec{
		{Name: "seconds", Unit: workload.Seconds, Better: workload.Lower, Headline: true, Doc: "the cold scan's time (SELECT max(dt) FROM test)"},
		{Name: "mb_per_s", Unit: workload.Count, Better: workload.Higher, Headline: true, Doc: "MB (10^6 bytes) read from the device per second of the scan"},
		{Name: "bytes_per_read", Unit: workload.Bytes, Headline: true, Doc: "the average size of the device's reads during the scan (/proc/diskstats)"},
		{Name: "bytes_read", Unit: workload.Bytes, Doc: "bytes the device read during the scan"},
		{Name: "reads", Unit: workload.Count, Doc: "reads the device completed during the scan"},
		{Name: "queue_depth", Unit: workload.Count, Doc: "reads in flight on average during the scan (diskstats' weighted time over the scan's)"},
		{Name: "read_ahead_kb", Unit: workload.Count, Doc: "the device's read-ahead during the scan, KiB"},
		{Name: "engine_read_ahead_threshold", Unit: workload.Count, Doc: "MariaDB: innodb_read_ahead_threshold during the scan (0: InnoDB's linear read-ahead off)"},
		{Name: "engine_read_ahead_pages", Unit: workload.Count, Doc: "MariaDB: pages InnoDB's read-ahead read (Innodb_buffer_pool_read_ahead), the seed's read-ahead pages"},
		{Name: "pages_read", Unit: workload.Count, Doc: "the table's pages the server read from outside its cache during the scan"},
		{Name: "table_bytes", Unit: workload.Bytes, Doc: "the table's size: its pages on disk"},
		{Name: "resident_before", Unit: workload.Count, Better: workload.Lower, Doc: "pages of the table's files in the operating system's cache when the scan started (0: cold)"},
		{Name: "device_mb_per_s", Unit: workload.Count, Better: workload.Higher,
			Doc: "the device's throughput at the scan's read size: a plain sequential read of the table's file by dbrig, as the engine reads it (PostgreSQL: 8 KiB read calls through the OS cache and its read-ahead; InnoDB: 16 KiB direct reads), cold"},
		{Name: "device_bytes_per_read", Unit: workload.Bytes, Doc: "the average size of the device's reads during that plain read"},
	}
}

type readahead struct {
	rows        int64
	readAhead   string
	deviceSize  int64
	calibration int64
	instance    string
}

var _ workload.Workload = (*readahead)(nil)

func newWorkload(p workload.Params) (workload.Workload, error) {
	w := &readahead{rows: p.Int("rows"), readAhead: p.String("read_ahead"), deviceSize: p.Int("device_size"),
		calibration: p.Int("calibration_bytes"), instance: p.String("instance")}
	return w, nil
}

// maxDevice is the largest loop device a point makes.
const maxDevice = 1 << 40

// checkReadAhead refuses at parse a read_ahead that is no setting.
func checkReadAhead(v any) error {
	_, _, err := resolve(fmt.Sprint(v), 0)
	return err
}

// resolve turns a read_ahead parameter into the device's read-ahead (KiB)
// and whether the engine's own read-ahead is turned off.
func resolve(setting string, deviceDefault int) (kb int, engineOff bool, err error) {
	switch setting {
	case Default:
		return deviceDefault, false, nil
	case Minimal:
		return minimalKB, true, nil
	case Off:
		return 0, true, nil
	}
	n, err := units.ParseSize(setting)
	if err != nil || n < 0 || n%1024 != 0 {
		return 0, false, fmt.Errorf("read_ahead = %q: want default, minimal, off or a whole number of KiB such as \"128KiB\"", setting)
	}
	return int(n / 1024), false, nil
}

// marker is the table where Prepare leaves, beside the data, where the
// table's files are and the device's own read-ahead.
const marker = "dbrig_read_ahead"

// tablespace is PostgreSQL's tablespace on the loop device.
const tablespace = "dbrig_read_ahead"

// bytesPerRow is a row's share of the table's pages on each engine: a
// page of 8 KiB each on PostgreSQL, a third of 16 KiB on InnoDB.
var bytesPerRow = map[string]int64{"postgres": 8192, "mariadb": 16384 / 3}

// Prepare makes a loop device of dbrig's own, puts the table's files on it
// (PostgreSQL: a tablespace; MariaDB: DATA DIRECTORY) and fills the table.
// Where dbrig may not make loop devices or restart the server, the point
// is skipped with the reason.
func (w *readahead) Prepare(ctx context.Context, env *workload.Env) error {
	inst := env.Instance(w.instance)
	if inst == nil {
		return fmt.Errorf("no instance %q", w.instance)
	}
	if err := coldPossible(inst); err != nil {
		return err
	}
	if env.Cleanup == nil {
		return errors.New("the read-ahead workload prepares its device in dbrig's own process")
	}
	per, ok := bytesPerRow[inst.Engine()]
	if !ok {
		return fmt.Errorf("the read-ahead workload has no %s dialect", inst.Engine())
	}
	if err := inst.CreateDatabase(ctx, env.Database); err != nil {
		return err
	}
	login, ok := inst.UnixLogin(env.Database)
	if !ok {
		login = inst.Login(env.Database)
	}
	c, err := dbconn.Open(ctx, env.Engines, login)
	if err != nil {
		return err
	}
	defer c.Close(ctx)
	dir, dev, err := w.tableDevice(ctx, env, c, inst.Engine(), per)
	if err != nil {
		return err
	}
	defaultKB, err := dev.ReadAheadKB()
	if err != nil {
		return err
	}
	opts := widetable.Options{Rows: w.rows, NoCluster: true, Progress: env.Progress}
	if inst.Engine() == "postgres" {
		// A tablespace of an earlier preparation is empty: its database
		// went with CreateDatabase.
		if err := c.Exec(ctx, "DROP TABLESPACE IF EXISTS "+tablespace, "CREATE TABLESPACE "+tablespace+" LOCATION '"+dir+"'"); err != nil {
			return err
		}
		opts.Tablespace = tablespace
	} else {
		opts.DataDirectory = dir
	}
	start := time.Now()
	if err := widetable.Create(ctx, c, opts); err != nil {
		return err
	}
	l, err := widetable.ReadLayout(ctx, c)
	if err != nil {
		return err
	}
	env.Log.Info("made the seed's table on the loop device", "rows", w.rows, "bytes", l.TableBytes(), "seconds", time.Since(start).Seconds())
	return c.Exec(ctx, "CREATE TABLE "+marker+" (dir varchar(1000) NOT NULL, default_kb int NOT NULL, table_bytes bigint NOT NULL, page_bytes int NOT NULL)",
		fmt.Sprintf("INSERT INTO %s VALUES ('%s', %d, %d, %d)", marker, strings.ReplaceAll(dir, "'", "''"), defaultKB, l.TableBytes(), l.PageBytes))
}

// tableDevice makes the directory the table goes in: on the instance's
// emulated disk (a disk profile on the instance: the server's reads of it
// are throttled) when its data is on one, else on a loop device of the
// workload's own.
func (w *readahead) tableDevice(ctx context.Context, env *workload.Env, c *dbconn.Conn, eng string, per int64) (string, blockdev.Device, error) {
	user, err := engine.FindServerUser()
	if err != nil {
		return "", blockdev.Device{}, err
	}
	base, dev, ok := emulatedDisk(ctx, c, eng)
	if !ok {
		if err := blockdev.RemoveStale(ctx, os.TempDir()); err != nil {
			env.Log.Warn("stale loop devices", "err", err)
		}
		size := w.deviceSize
		if size == 0 {
			size = max(256<<20, w.rows*per*13/10+128<<20)
		}
		loop, err := blockdev.NewLoop(ctx, os.TempDir(), blockdev.LoopOptions{Size: size, UID: int(user.UID), GID: int(user.GID)})
		if err != nil {
			return "", dev, &topology.Unreachable{Reason: "the kernel refused a loop device: " + err.Error()}
		}
		env.Cleanup(loop.Close)
		env.Log.Info("made a loop device", "device", loop.Device.Path(), "bytes", size, "direct_io", loop.DirectIO)
		base, dev = loop.Mount, loop.Device
	}
	// A fresh directory each time: a tablespace's must be empty.
	dir, err := os.MkdirTemp(base, "read-ahead-")
	if err != nil {
		return "", dev, err
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return "", dev, err
	}
	return dir, dev, user.Chown(dir)
}

// emulatedDisk finds the mount of the loop device this dbrig made under
// the server's data directory, if it is on one.
func emulatedDisk(ctx context.Context, c *dbconn.Conn, eng string) (string, blockdev.Device, bool) {
	query := map[string]string{"postgres": "SHOW data_directory", "mariadb": "SELECT @@datadir"}[eng]
	rows, err := c.Rows(ctx, query)
	if err != nil || len(rows) != 1 || len(rows[0]) != 1 {
		return "", blockdev.Device{}, false
	}
	dev, err := blockdev.DeviceOf(rows[0][0])
	if err != nil || !blockdev.MadeByThisProcess(dev) {
		return "", blockdev.Device{}, false
	}
	mount, err := blockdev.MountPoint(rows[0][0])
	return mount, dev, err == nil
}

// coldPossible says when a cold read cannot be made: a server dbrig may
// not restart, or no loop device to control.
func coldPossible(inst engine.Instance) error {
	if _, ok := inst.(engine.Restarter); !ok || !inst.Owned() {
		return &topology.Unreachable{Reason: "a cold scan empties the server's cache by restarting it, and dbrig never restarts a server it did not start"}
	}
	if err := blockdev.Permitted(); err != nil {
		return &topology.Unreachable{Reason: "the read-ahead of the table's device cannot be set: " + err.Error()}
	}
	return nil
}

// Run measures one cold scan: the device's read-ahead set, the server
// restarted in place (its cache empty), the table's files evicted from the
// operating system's cache (checked), the scan timed with the device's
// counters read around it; then a plain read of the same file at the same
// read size measures what the device gives.
func (w *readahead) Run(ctx context.Context, env *workload.Env) (workload.Measurement, error) {
	m := workload.Measurement{Metrics: map[string]float64{}}
	sc, err := w.locate(ctx, env)
	if err != nil {
		return m, err
	}
	if err := sc.dev.SetReadAheadKB(sc.kb); err != nil {
		return m, err
	}
	notes, resident, err := sc.makeCold(ctx)
	m.Notes = append(m.Notes, notes...)
	if err != nil {
		return m, err
	}
	m.Metrics["resident_before"] = float64(resident)
	direct, err := sc.measureScan(ctx, env, &m)
	if err != nil {
		return m, err
	}
	// The device at the scan's read size, with no database in the way.
	if _, err := evict(sc.dev, []string{sc.tableFile}); err != nil {
		return m, err
	}
	before, _ := sc.dev.Stats()
	rate, err := blockdev.ReadRate(ctx, sc.tableFile, int(sc.where.pageBytes), direct, w.calibration, 5*time.Second)
	if err != nil {
		return m, fmt.Errorf("measure the device: %w", err)
	}
	after, _ := sc.dev.Stats()
	m.Metrics["device_mb_per_s"] = rate.BytesPerSecond() / 1e6
	m.Metrics["device_bytes_per_read"] = after.Sub(before).BytesPerRead()
	return m, nil
}

// scanSetup is a point's table as the server placed it: its files, the
// device dbrig made under them and the read-ahead the point sets there.
type scanSetup struct {
	inst      engine.Instance
	login     engine.Conn
	where     location
	dev       blockdev.Device
	files     []string
	tableFile string
	kb        int
	engineOff bool
}

// locate finds the point's instance, the table's files and the device
// under them, which must be one this dbrig made.
func (w *readahead) locate(ctx context.Context, env *workload.Env) (*scanSetup, error) {
	if env.Instance == nil {
		return nil, errors.New("the read-ahead workload restarts the server and reads its files: it runs in dbrig's own process (give its client no gomaxprocs or cpus)")
	}
	sc := &scanSetup{inst: env.Instance(w.instance)}
	if sc.inst == nil {
		return nil, fmt.Errorf("no instance %q", w.instance)
	}
	if err := coldPossible(sc.inst); err != nil {
		return nil, err
	}
	ep, err := env.Conn(env.ClientSite, w.instance, env.Database)
	if err != nil {
		return nil, err
	}
	sc.login = ep.Conn
	if sc.where, err = readMarker(ctx, env, ep.Conn); err != nil {
		return nil, err
	}
	if sc.dev, err = blockdev.DeviceOf(sc.where.dir); err != nil {
		return nil, err
	}
	if !blockdev.MadeByThisProcess(sc.dev) {
		return nil, fmt.Errorf("the table's directory %s is on %s, which this dbrig did not make: it changes no device's read-ahead but its own", sc.where.dir, sc.dev.Path())
	}
	if sc.files, err = blockdev.FilesUnder(sc.where.dir); err != nil {
		return nil, err
	}
	sc.tableFile = largest(sc.files)
	if sc.kb, sc.engineOff, err = resolve(w.readAhead, sc.where.defaultKB); err != nil {
		return nil, err
	}
	return sc, nil
}

// makeCold empties the server's cache by a restart and the OS's by
// evicting the table's files (and the device's own buffers), checked page
// by page; it returns what the point's notes should say and the pages
// still resident.
func (sc *scanSetup) makeCold(ctx context.Context) (notes []string, resident int64, err error) {
	if err := sc.inst.(engine.Restarter).Restart(ctx); err != nil {
		return nil, 0, err
	}
	if resident, err = evict(sc.dev, sc.files); err != nil || resident == 0 {
		return nil, resident, err
	}
	if err := blockdev.DropCaches(); err != nil {
		return []string{fmt.Sprintf("%d pages of the table's files stayed in the OS cache after they were evicted, and dropping every cache was not permitted (%v): the scan was not wholly cold", resident, err)}, resident, nil
	}
	if resident, err = evict(sc.dev, sc.files); err != nil {
		return nil, resident, err
	}
	return []string{"the table's files were evicted, and the OS's caches dropped when pages stayed"}, resident, nil
}

// measureScan runs the cold scan and records what it read from the device
// in m; it returns whether the scan's reads bypassed the OS cache, as the
// device's own measurement must then.
func (sc *scanSetup) measureScan(ctx context.Context, env *workload.Env, m *workload.Measurement) (direct bool, err error) {
	c, err := dbconn.Open(ctx, env.Engines, sc.login)
	if err != nil {
		return false, err
	}
	defer c.Close(ctx)
	s, err := newScanner(ctx, c, sc.engineOff)
	if err != nil {
		return false, err
	}
	before, err := sc.dev.Stats()
	if err != nil {
		return false, err
	}
	elapsed, pages, err := s.scan(ctx)
	if err != nil {
		return false, err
	}
	after, err := sc.dev.Stats()
	if err != nil {
		return false, err
	}
	d := after.Sub(before)
	m.Metrics["seconds"] = elapsed.Seconds()
	m.Metrics["bytes_read"] = float64(d.BytesRead())
	m.Metrics["reads"] = float64(d.Reads)
	m.Metrics["bytes_per_read"] = d.BytesPerRead()
	m.Metrics["mb_per_s"] = float64(d.BytesRead()) / 1e6 / elapsed.Seconds()
	m.Metrics["queue_depth"] = d.QueueDepth(elapsed.Seconds())
	m.Metrics["read_ahead_kb"] = float64(sc.kb)
	m.Metrics["pages_read"] = float64(pages)
	m.Metrics["table_bytes"] = float64(sc.where.tableBytes)
	for k, v := range s.engineMetrics {
		m.Metrics[k] = v
	}
	if pages*sc.where.pageBytes < sc.where.tableBytes*9/10 {
		m.Notes = append(m.Notes, fmt.Sprintf("the server read only %d of the table's %d pages from outside its cache: the scan was not cold", pages, sc.where.tableBytes/sc.where.pageBytes))
	}
	return s.direct, nil
}

// evict empties the OS's cache of the files and the device's buffers, and
// says how many of the files' pages stayed.
func evict(dev blockdev.Device, files []string) (int64, error) {
	if err := blockdev.Evict(files...); err != nil {
		return 0, err
	}
	if err := dev.FlushBuffers(); err != nil {
		return 0, err
	}
	resident, _, err := blockdev.Resident(files...)
	return resident, err
}

func largest(files []string) string {
	var best string
	var size int64 = -1
	for _, f := range files {
		if st, err := os.Stat(f); err == nil && st.Size() > size {
			best, size = f, st.Size()
		}
	}
	return best
}

type location struct {
	dir                   string
	defaultKB             int
	tableBytes, pageBytes int64
}

func readMarker(ctx context.Context, env *workload.Env, login engine.Conn) (location, error) {
	c, err := dbconn.Open(ctx, env.Engines, login)
	if err != nil {
		return location{}, err
	}
	defer c.Close(ctx)
	rows, err := c.Rows(ctx, "SELECT dir, default_kb, table_bytes, page_bytes FROM "+marker)
	if err != nil || len(rows) != 1 {
		return location{}, fmt.Errorf("where Prepare put the table (%s): %v", marker, errors.Join(err, fmt.Errorf("%d rows", len(rows))))
	}
	var l location
	l.dir = rows[0][0]
	var errs [3]error
	l.defaultKB, errs[0] = strconv.Atoi(rows[0][1])
	l.tableBytes, errs[1] = strconv.ParseInt(rows[0][2], 10, 64)
	l.pageBytes, errs[2] = strconv.ParseInt(rows[0][3], 10, 64)
	return l, errors.Join(errs[:]...)
}
