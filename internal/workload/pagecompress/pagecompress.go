package pagecompress

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/dbrig/dbrig/internal/engine"
	"github.com/dbrig/dbrig/internal/topology"
	"github.com/dbrig/dbrig/internal/workload"
	"github.com/dbrig/dbrig/internal/workload/dbconn"
)

// The orders the table is clustered in.
const (
	ByCID    = "cid"
	ByFiller = "filler"
)

// Kind registers the workload.
func Kind() workload.Kind {
	return workload.Kind{
		Name: "page-compression",
		Doc:  "seed 002's customer table clustered on cid or on filler, each page compressed on its own (zstd, S2, deflate) and, on MariaDB, the engine's PAGE_COMPRESSED size on disk",
		Params: []workload.ParamSpec{
			{Name: "rows", Type: workload.IntParam, Default: int64(8_000_000), Doc: "rows of the table (the seed: 8,000,000)",
				Max: math.MaxInt32, Why: "cid is an int"},
			{Name: "period", Type: workload.IntParam, AllowZero: true, Default: int64(80),
				Doc: "the filler repeats with this period (the seed: 80, from @i % 80); 0: every row's filler distinct (its cid, 7 digits, up to 9,999,999 rows)",
				Max: maxDistinct + 1, Why: "the filler keeps 7 digits of i % period"},
			{Name: "order", Type: workload.StringParam, Choices: []string{ByCID, ByFiller}, Doc: "the column the table is clustered on"},
			{Name: "instance", Type: workload.StringParam, Default: "db", Doc: "the instance that holds the table"},
		},
		New:         newWorkload,
		CheckParams: checkParams,
		PrepareKey: func(p workload.Params) string {
			return fmt.Sprintf("page-compression rows=%d period=%d instance=%s", p.Int("rows"), p.Int("period"), p.String("instance"))
		},
		Model:   Model,
		Predict: Predict,
		Metrics: metricSpecs(),
	}
}

func metricSpecs() []workload.MetricSpec {
	return []workload.MetricSpec{
		{Name: "ratio", Unit: workload.Ratio, Better: workload.Higher, Headline: true,
			Doc: "the study's measure of compression: on PostgreSQL, each heap page compressed on its own with zstd; on MariaDB, the engine's own PAGE_COMPRESSED table against the same table uncompressed, in allocated disk blocks"},
		{Name: "distinct_per_page", Unit: workload.Count, Headline: true, Doc: "distinct filler values on a page, on average"},
		{Name: "distinct_values", Unit: workload.Count, Doc: "distinct filler values in the table"},
		{Name: "zstd_ratio", Unit: workload.Ratio, Better: workload.Higher, Doc: "the table's pages over their sizes compressed one by one with zstd (default level)"},
		{Name: "s2_ratio", Unit: workload.Ratio, Better: workload.Higher, Doc: "the same with S2, an LZ4-class codec"},
		{Name: "deflate_ratio", Unit: workload.Ratio, Better: workload.Higher, Doc: "the same with zlib's deflate at MariaDB's innodb_compression_level (PostgreSQL: 6)"},
		{Name: "engine_ratio", Unit: workload.Ratio, Better: workload.Higher, Doc: "MariaDB: the PAGE_COMPRESSED table's pages over the disk blocks they take (the pages InnoDB wrote, found with SEEK_DATA, against the file's allocated blocks)"},
		{Name: "engine_plain_bytes", Unit: workload.Bytes, Doc: "MariaDB: the PAGE_COMPRESSED table's pages, uncompressed"},
		{Name: "engine_compressed_bytes", Unit: workload.Bytes, Doc: "MariaDB: the PAGE_COMPRESSED table's allocated blocks"},
		{Name: "fs_block_bytes", Unit: workload.Bytes, Doc: "MariaDB: the file system's block, the unit a compressed page is stored in"},
		{Name: "blocks_ratio", Unit: workload.Ratio, Better: workload.Higher,
			Doc: "MariaDB: the leaf pages over their deflate sizes plus a 40-byte header rounded up to whole file system blocks: what page compression can save of them"},
		{Name: "pages", Unit: workload.Count, Doc: "pages of the table measured (PostgreSQL: the heap; MariaDB: the clustered index's leaves)"},
		{Name: "rows_per_page", Unit: workload.Count, Doc: "rows on a page, on average"},
		{Name: "row_bytes", Unit: workload.Bytes, Doc: "bytes a row takes on its page with its slot"},
		{Name: "value_bytes", Unit: workload.Bytes, Doc: "bytes a filler value takes in a row"},
		{Name: "page_bytes", Unit: workload.Bytes, Doc: "the engine's page size"},
	}
}

type pagecompress struct {
	rows, period int64
	order        string
	instance     string
}

var _ workload.Workload = (*pagecompress)(nil)

func newWorkload(p workload.Params) (workload.Workload, error) {
	return &pagecompress{rows: p.Int("rows"), period: p.Int("period"), order: p.String("order"), instance: p.String("instance")}, nil
}

// maxDistinct is the most distinct fillers: 7 digits.
const maxDistinct = 9_999_999

// checkParams refuses at parse rows that period = 0 cannot give each a
// filler of its own.
func checkParams(p workload.Params) []workload.ParamError {
	if p.Int("period") == 0 && p.Int("rows") > maxDistinct {
		return []workload.ParamError{{Param: "rows", Err: fmt.Errorf("rows = %d: period = 0 gives each row its cid in 7 digits as its filler: at most 9,999,999 rows", p.Int("rows"))}}
	}
	return nil
}

func table(order string) string { return "customer_" + order }

// compressed is MariaDB's page-compressed copy of a table.
func compressed(order string) string { return table(order) + "_pc" }

// Prepare makes the table in both orders (and on MariaDB a page-compressed
// copy of each).
func (w *pagecompress) Prepare(ctx context.Context, env *workload.Env) error {
	inst := env.Instance(w.instance)
	if inst == nil {
		return fmt.Errorf("no instance %q", w.instance)
	}
	if inst.Engine() == "mariadb" {
		if _, ok := inst.(dataDirer); !ok || !inst.Owned() {
			return &topology.Unreachable{Reason: "on MariaDB the pages are read from the table's file and its size on disk from the file system: only on an instance dbrig started"}
		}
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
	start := time.Now()
	if err := makeTables(ctx, c, w.rows, w.period, env.Progress); err != nil {
		return err
	}
	env.Log.Info("made the customer table in both orders", "rows", w.rows, "period", w.period, "seconds", time.Since(start).Seconds())
	return nil
}

// dataDirer is an owned instance's data directory.
type dataDirer interface{ DataDir() string }

// Run measures the table in one order.
func (w *pagecompress) Run(ctx context.Context, env *workload.Env) (workload.Measurement, error) {
	ep, err := env.Conn(env.ClientSite, w.instance, env.Database)
	if err != nil {
		return workload.Measurement{}, err
	}
	c, err := dbconn.Open(ctx, env.Engines, ep.Conn)
	if err != nil {
		return workload.Measurement{}, err
	}
	defer c.Close(ctx)
	var m measured
	switch c.Engine() {
	case "postgres":
		m, err = measurePostgres(ctx, c, table(w.order))
	case "mariadb":
		if env.Instance == nil {
			return workload.Measurement{}, errors.New("on MariaDB the workload reads the table's file: it runs in dbrig's own process (give its client no gomaxprocs or cpus)")
		}
		dd, ok := env.Instance(w.instance).(dataDirer)
		if !ok {
			return workload.Measurement{}, &topology.Unreachable{Reason: "on MariaDB the pages are read from the table's file: only on an instance dbrig started"}
		}
		m, err = measureMariaDB(ctx, c, dd.DataDir(), env.Database, w.order)
	default:
		err = fmt.Errorf("the page-compression workload has no %s dialect", c.Engine())
	}
	if err != nil {
		return workload.Measurement{}, err
	}
	if m.rows != w.rows {
		return workload.Measurement{}, fmt.Errorf("the pages hold %d rows, the table %d", m.rows, w.rows)
	}
	all, err := c.Int(ctx, "SELECT count(DISTINCT filler) FROM "+table(w.order))
	if err != nil {
		return workload.Measurement{}, err
	}
	out := m.measurement(c.Engine())
	out.Metrics["distinct_values"] = float64(all)
	return out, nil
}

// measured is what one order's pages gave.
type measured struct {
	pages        []pageStat
	rows         int64
	pageBytes    int
	valueBytes   float64
	engine       engineSize
	deflateLevel int
	blocksRatio  float64
	haveEngine   bool
	note         string
}

// engineSize is MariaDB's own measure: the bytes of the pages it wrote of
// the compressed copy, the bytes they take on disk, and the file system's
// block.
type engineSize struct {
	plain, compressed, block int64
}

func (m measured) measurement(engineName string) workload.Measurement {
	out := workload.Measurement{Metrics: map[string]float64{}, Series: map[string][]float64{}}
	var raw, z, s, d, rows, used, distinct float64
	maxD := 0
	for _, p := range m.pages {
		maxD = max(maxD, p.distinct)
	}
	byD := make([]float64, maxD+1)
	zByD := make([]float64, maxD+1)
	for _, p := range m.pages {
		raw += float64(m.pageBytes)
		z += float64(p.compressed.zstd)
		s += float64(p.compressed.s2)
		d += float64(p.compressed.deflate)
		rows += float64(p.rows)
		used += float64(p.used)
		distinct += float64(p.distinct)
		byD[p.distinct]++
		zByD[p.distinct] += float64(p.compressed.zstd)
	}
	for i := range zByD {
		if byD[i] > 0 {
			zByD[i] /= byD[i]
		}
	}
	n := float64(len(m.pages))
	x := out.Metrics
	x["zstd_ratio"], x["s2_ratio"], x["deflate_ratio"] = raw/z, raw/s, raw/d
	x["pages"] = n
	x["rows_per_page"] = rows / n
	x["distinct_per_page"] = distinct / n
	x["row_bytes"] = used / rows
	x["value_bytes"] = m.valueBytes
	x["page_bytes"] = float64(m.pageBytes)
	x["ratio"] = x["zstd_ratio"]
	if m.haveEngine {
		x["engine_plain_bytes"] = float64(m.engine.plain)
		x["engine_compressed_bytes"] = float64(m.engine.compressed)
		x["fs_block_bytes"] = float64(m.engine.block)
		x["engine_ratio"] = float64(m.engine.plain) / float64(m.engine.compressed)
		x["blocks_ratio"] = m.blocksRatio
		x["ratio"] = x["engine_ratio"]
	}
	out.Series["pages_by_distinct"] = byD
	out.Series["zstd_bytes_by_distinct"] = zByD
	if m.note != "" {
		out.Notes = append(out.Notes, m.note)
	}
	return out
}

// measurePostgres reads every heap page through pageinspect's get_raw_page
// (the pages as the server holds them), compresses each on its own, and
// counts each page's distinct fillers from the rows' addresses.
func measurePostgres(ctx context.Context, c *dbconn.Conn, t string) (measured, error) {
	m := measured{deflateLevel: 6}
	bs, err := c.Int(ctx, "SELECT current_setting('block_size')::int")
	if err != nil {
		return m, err
	}
	m.pageBytes = int(bs)
	nblocks, err := c.Int(ctx, fmt.Sprintf("SELECT pg_relation_size('%s') / %d", t, bs))
	if err != nil {
		return m, err
	}
	v, err := c.Value(ctx, "SELECT avg(pg_column_size(filler)) FROM "+t)
	if err != nil {
		return m, err
	}
	if m.valueBytes, err = strconv.ParseFloat(v, 64); err != nil {
		return m, fmt.Errorf("the fillers' size %q: %w", v, err)
	}
	type counts struct{ distinct, rows int }
	byBlock := make(map[int64]counts, nblocks)
	err = c.Each(ctx, "SELECT (ctid::text::point)[0]::bigint, count(DISTINCT filler), count(*) FROM "+t+" GROUP BY 1", func(r []string) error {
		b, e1 := strconv.ParseInt(r[0], 10, 64)
		d, e2 := strconv.Atoi(r[1])
		n, e3 := strconv.Atoi(r[2])
		if err := errors.Join(e1, e2, e3); err != nil {
			return fmt.Errorf("distinct fillers by page: %w", err)
		}
		byBlock[b] = counts{d, n}
		return nil
	})
	if err != nil {
		return m, err
	}
	codec, err := newCodecs(m.deflateLevel)
	if err != nil {
		return m, err
	}
	defer codec.close()
	if err := readPages(ctx, c, t, nblocks, &m, codec, func(blk int64) (int, int) {
		cnt := byBlock[blk]
		return cnt.distinct, cnt.rows
	}); err != nil {
		return m, err
	}
	if len(m.pages) == 0 {
		return m, fmt.Errorf("%s has no pages", t)
	}
	return m, nil
}

// readPages reads a table's heap pages through get_raw_page, checks each
// page's line pointers against the rows counted (count: distinct fillers
// and rows of a block), and adds each page, compressed on its own, to m.
func readPages(ctx context.Context, c *dbconn.Conn, t string, nblocks int64, m *measured, codec *codecs, count func(blk int64) (distinct, rows int)) error {
	// Pages as hex (a session reads text): decoded, the page's own bytes.
	var args engine.Args
	var page []byte
	var perr error
	err := engine.Each(ctx, c.Session, "SELECT n, encode(get_raw_page($1, 'main', n::int), 'hex') FROM generate_series(0, $2::bigint - 1) AS n",
		args.Text(t).Int(nblocks), func(vals [][]byte) error {
			blk, err := strconv.ParseInt(string(vals[0]), 10, 64)
			if err != nil {
				perr = err
				return err
			}
			perr = addPage(m, codec, &page, vals[1], blk, count)
			if perr != nil {
				perr = fmt.Errorf("page %d of %s: %w", blk, t, perr)
			}
			return perr
		})
	if perr != nil {
		return perr
	}
	if err != nil {
		return fmt.Errorf("read the pages of %s (pageinspect's get_raw_page): %w", t, err)
	}
	return nil
}

// addPage decodes one page from hex into page and adds it to m.
func addPage(m *measured, codec *codecs, page *[]byte, hexPage []byte, blk int64, count func(int64) (int, int)) error {
	n := hex.DecodedLen(len(hexPage))
	*page = slices.Grow((*page)[:0], n)[:n]
	if _, err := hex.Decode(*page, hexPage); err != nil {
		return err
	}
	st, err := pgPage(*page)
	if err != nil {
		return err
	}
	distinct, rows := count(blk)
	if rows != st.rows {
		return fmt.Errorf("%d line pointers, %d rows", st.rows, rows)
	}
	st.distinct = distinct
	st.compressed = codec.compress(*page)
	m.pages = append(m.pages, st)
	m.rows += int64(st.rows)
	return nil
}

// measureMariaDB reads the plain table's leaf pages from its file in key
// order, compresses each on its own, counts each page's distinct fillers
// from the rows in key order, and measures the compressed copy on disk.
func measureMariaDB(ctx context.Context, c *dbconn.Conn, dataDir, db, order string) (measured, error) {
	mm := &mariaMeasure{c: c, dataDir: dataDir, db: db, order: order, t: table(order), pc: compressed(order), m: measured{haveEngine: true}}
	// Every dirty page of both copies written: the file holds the table,
	// and the compressed copy's pages are compressed on disk.
	if err := c.Exec(ctx, "FLUSH TABLES "+mm.t+", "+mm.pc+" FOR EXPORT", "UNLOCK TABLES"); err != nil {
		return mm.m, err
	}
	if err := mm.readSettings(ctx); err != nil {
		return mm.m, err
	}
	if err := mm.readLeaves(ctx); err != nil {
		return mm.m, err
	}
	if err := mm.countFillers(ctx); err != nil {
		return mm.m, err
	}
	// CHAR(100) in latin1 takes its 100 bytes in a record (the driver's
	// value has its trailing spaces cut, so it is not measured from it).
	mm.m.valueBytes = 100
	err := mm.measureEngine(ctx)
	return mm.m, err
}

// mariaMeasure is measureMariaDB's state between its steps: where the
// table t (in order) and its compressed copy pc live, and what was measured
// so far.
type mariaMeasure struct {
	c           *dbconn.Conn
	dataDir, db string
	order       string
	t, pc       string
	m           measured
}

// readSettings reads the server's page size and compression settings.
func (mm *mariaMeasure) readSettings(ctx context.Context) error {
	ps, err := mm.c.Int(ctx, "SELECT @@innodb_page_size")
	if err != nil {
		return err
	}
	mm.m.pageBytes = int(ps)
	level, err := mm.c.Int(ctx, "SELECT @@innodb_compression_level")
	if err != nil {
		return err
	}
	mm.m.deflateLevel = int(level)
	if algo, err := mm.c.Value(ctx, "SELECT @@innodb_compression_algorithm"); err == nil && algo != "zlib" {
		mm.m.note = fmt.Sprintf("MariaDB compresses pages with %s here; the blocks model counts deflate's (zlib's) sizes", algo)
	}
	return nil
}

// readLeaves reads and compresses the leaf pages of the table's clustered
// index from its file.
func (mm *mariaMeasure) readLeaves(ctx context.Context) error {
	id, err := mm.c.Int(ctx, "SELECT i.INDEX_ID FROM information_schema.INNODB_SYS_INDEXES i JOIN information_schema.INNODB_SYS_TABLES t ON t.TABLE_ID = i.TABLE_ID "+
		"WHERE t.NAME = '"+mm.db+"/"+mm.t+"' AND i.NAME = 'PRIMARY'")
	if err != nil {
		return fmt.Errorf("the clustered index of %s: %w", mm.t, err)
	}
	codec, err := newCodecs(mm.m.deflateLevel)
	if err != nil {
		return err
	}
	defer codec.close()
	mm.m.pages, err = innodbLeaves(filepath.Join(mm.dataDir, mm.db, mm.t+".ibd"), mm.m.pageBytes, uint64(id), codec)
	return err
}

// countFillers counts each page's distinct fillers: the rows in key order,
// taken page by page by each leaf's record count.
func (mm *mariaMeasure) countFillers(ctx context.Context) error {
	key := "cid"
	if mm.order == ByFiller {
		key = "filler, cid"
	}
	m := &mm.m
	i, left := 0, 0
	seen := map[string]bool{}
	err := mm.c.Each(ctx, "SELECT filler FROM "+mm.t+" ORDER BY "+key, func(r []string) error {
		for left == 0 {
			if i >= len(m.pages) {
				return fmt.Errorf("%s has more rows than its leaf pages hold", mm.t)
			}
			left = m.pages[i].rows
			if left == 0 {
				i++
			}
		}
		seen[r[0]] = true
		m.rows++
		if left--; left == 0 {
			m.pages[i].distinct = len(seen)
			clear(seen)
			i++
		}
		return nil
	})
	if err != nil {
		return err
	}
	if i != len(m.pages) || left != 0 {
		return fmt.Errorf("%s: its %d rows fill %d of its %d leaf pages", mm.t, m.rows, i, len(m.pages))
	}
	return nil
}

// measureEngine takes the engine's own measure: the pages it wrote of the
// compressed copy against the blocks they take on disk (a compressed page
// is punched down to whole file system blocks; pages never written are
// holes), and the blocks model's ratio for the same block.
func (mm *mariaMeasure) measureEngine(ctx context.Context) error {
	block, err := mm.c.Int(ctx, "SELECT FS_BLOCK_SIZE FROM information_schema.INNODB_SYS_TABLESPACES WHERE NAME = '"+mm.db+"/"+mm.pc+"'")
	if err != nil {
		return fmt.Errorf("the file system block of %s: %w", mm.pc, err)
	}
	pages, alloc, err := onDisk(filepath.Join(mm.dataDir, mm.db, mm.pc+".ibd"), int64(mm.m.pageBytes))
	if err != nil {
		return err
	}
	if pages == 0 || alloc == 0 || block <= 0 {
		return fmt.Errorf("%s holds %d pages in %d bytes on disk (blocks of %d bytes)", mm.pc, pages, alloc, block)
	}
	m := &mm.m
	m.engine = engineSize{plain: pages * int64(m.pageBytes), compressed: alloc, block: block}
	var raw, stored float64
	for _, p := range m.pages {
		raw += float64(m.pageBytes)
		stored += float64((int64(p.compressed.deflate+40) + m.engine.block - 1) / m.engine.block * m.engine.block)
	}
	m.blocksRatio = raw / stored
	return nil
}

// fillerSQL is the seed's filler for row i: the first 7 characters of
// (i % period) followed by zeros, then 92 'a's (99 characters in a
// CHAR(100)); with period 0, i itself in 7 digits.
func fillerSQL(engineName string, i string, period int64) string {
	if engineName == "postgres" {
		if period == 0 {
			return fmt.Sprintf("lpad(%s::text, 7, '0') || repeat('a', 92)", i)
		}
		return fmt.Sprintf("left((%s %% %d)::text || '00000000', 7) || repeat('a', 92)", i, period)
	}
	if period == 0 {
		return fmt.Sprintf("CONCAT(LPAD(%s, 7, '0'), REPEAT('a', 92))", i)
	}
	return fmt.Sprintf("CONCAT(LEFT(CONCAT(%s %% %d, '00000000'), 7), REPEAT('a', 92))", i, period)
}

const chunk = 500_000

// makeTables makes customer_cid and customer_filler, the same rows
// clustered on each column: PostgreSQL with CLUSTER (in one transaction,
// skipping the WAL at wal_level = minimal), then VACUUM; MariaDB with the
// primary key (cid) and (filler, cid), filled in key order, with a
// PAGE_COMPRESSED copy of each.
func makeTables(ctx context.Context, c *dbconn.Conn, rows, period int64, progress func(done, total int64)) error {
	report := func(done int64) {
		if progress != nil {
			progress(done, 2*rows)
		}
	}
	if c.Engine() == "postgres" {
		if err := c.Exec(ctx, "CREATE EXTENSION IF NOT EXISTS pageinspect", "BEGIN",
			"CREATE TABLE "+table(ByCID)+" (cid int NOT NULL, filler char(100) NOT NULL)"); err != nil {
			return err
		}
		for lo := int64(1); lo <= rows; lo += chunk {
			hi := min(lo+chunk-1, rows)
			if err := c.Exec(ctx, fmt.Sprintf("INSERT INTO %s SELECT i, %s FROM generate_series(%d, %d) AS i", table(ByCID), fillerSQL("postgres", "i", period), lo, hi)); err != nil {
				return rollback(ctx, c, err)
			}
			report(hi)
		}
		err := c.Exec(ctx,
			"CREATE INDEX customer_cid_cid ON "+table(ByCID)+" (cid)",
			"CLUSTER "+table(ByCID)+" USING customer_cid_cid",
			"CREATE TABLE "+table(ByFiller)+" (cid int NOT NULL, filler char(100) NOT NULL)",
			"INSERT INTO "+table(ByFiller)+" SELECT * FROM "+table(ByCID),
			"CREATE INDEX customer_filler_filler ON "+table(ByFiller)+" (filler)",
			"CLUSTER "+table(ByFiller)+" USING customer_filler_filler",
			"COMMIT")
		if err != nil {
			return rollback(ctx, c, err)
		}
		report(2 * rows)
		return c.Exec(ctx, "VACUUM (ANALYZE) "+table(ByCID), "VACUUM (ANALYZE) "+table(ByFiller))
	}
	cols := "(cid int NOT NULL, filler char(100) CHARACTER SET latin1 NOT NULL, PRIMARY KEY (%s)) ENGINE=InnoDB"
	if err := c.Exec(ctx,
		"CREATE TABLE "+table(ByCID)+" "+fmt.Sprintf(cols, "cid"),
		"CREATE TABLE "+table(ByFiller)+" "+fmt.Sprintf(cols, "filler, cid"),
		"CREATE TABLE "+compressed(ByCID)+" "+fmt.Sprintf(cols, "cid")+" PAGE_COMPRESSED=1",
		"CREATE TABLE "+compressed(ByFiller)+" "+fmt.Sprintf(cols, "filler, cid")+" PAGE_COMPRESSED=1"); err != nil {
		return err
	}
	for lo := int64(1); lo <= rows; lo += chunk {
		hi := min(lo+chunk-1, rows)
		if err := c.Exec(ctx, fmt.Sprintf("INSERT INTO %s SELECT seq, %s FROM seq_%d_to_%d", table(ByCID), fillerSQL("mariadb", "seq", period), lo, hi)); err != nil {
			return err
		}
		report(hi / 2)
	}
	if err := c.Exec(ctx,
		"INSERT INTO "+compressed(ByCID)+" SELECT * FROM "+table(ByCID)+" ORDER BY cid",
		"INSERT INTO "+table(ByFiller)+" SELECT * FROM "+table(ByCID)+" ORDER BY filler, cid"); err != nil {
		return err
	}
	report(rows * 3 / 2)
	if err := c.Exec(ctx,
		"INSERT INTO "+compressed(ByFiller)+" SELECT * FROM "+table(ByFiller)+" ORDER BY filler, cid",
		"ANALYZE TABLE "+table(ByCID)+", "+table(ByFiller)+", "+compressed(ByCID)+", "+compressed(ByFiller)); err != nil {
		return err
	}
	report(2 * rows)
	return nil
}

func rollback(ctx context.Context, c *dbconn.Conn, err error) error {
	_ = c.Exec(context.WithoutCancel(ctx), "ROLLBACK")
	return fmt.Errorf("make the customer table: %w", err)
}
