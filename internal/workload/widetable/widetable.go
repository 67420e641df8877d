// Package widetable makes seed 002's table on either engine:
//
//	CREATE TABLE test (i int, j int, dt datetime, filler char(5000))
//	CREATE CLUSTERED INDEX cix_test ON test(i); CREATE INDEX cx_test ON test(j)
//
// filled for i = 1 .. rows with j = i for even i and rows - i for odd i
// (the seed's CASE WHEN @i % 2 = 0 THEN @i ELSE 2000000 - @i END, with its
// 2,000,000 rows as the parameter), a time that grows with i, and 'abc'
// padded to 5,000 bytes: rows so wide that a page holds one of them (8 KiB
// pages) or three (InnoDB's 16 KiB). The key-lookup and read-ahead studies
// read it.
//
// PostgreSQL: the filler is stored PLAIN (neither compressed nor moved out
// of line, so a row takes its 5 KB in the heap as it did in the seed's
// pages); the table is clustered on i with CLUSTER and indexed on j, then
// vacuumed (hint bits and the visibility map set, so a read writes
// nothing). With wal_level = minimal the table and its load skip the WAL,
// being made in one transaction. MariaDB: InnoDB clusters the table on its
// primary key, i; CHAR holds at most 255 characters there, so the filler
// is VARCHAR(5000) in latin1 padded to its 5,000 bytes as CHAR(5000) is.
package widetable

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/dbrig/dbrig/internal/workload/dbconn"
)

// Table and index names, as the seed's.
const (
	Table  = "test"
	IndexI = "test_i" // PostgreSQL's index on i, which CLUSTER orders the heap by
	IndexJ = "test_j"
)

// FillerBytes is the width of the seed's filler column.
const FillerBytes = 5000

// MaxRows bounds the table: a row fills an 8 KiB page, so 100,000,000
// rows are 800 GB of disk, fifty times the seed's 2,000,000; MaxRowsWhy
// says so in an error.
const (
	MaxRows    = 100_000_000
	MaxRowsWhy = "a row fills an 8 KiB page: 100,000,000 rows are 800 GB of disk, fifty times the seed's"
	MinRowsWhy = "the table needs at least 2 rows"
)

// Options say how many rows and where they live.
type Options struct {
	Rows int64
	// Tablespace, on PostgreSQL, is the tablespace of the table and its
	// indexes ("" = the database's).
	Tablespace string
	// DataDirectory, on MariaDB, is the directory of the table's file
	// (CREATE TABLE ... DATA DIRECTORY; "" = the data directory).
	DataDirectory string
	// NoCluster leaves out the index on i and CLUSTER on PostgreSQL: the
	// rows go in in i order, so the heap is in i order as CLUSTER leaves
	// it, without CLUSTER's second copy of the table (a device sized for
	// one copy holds it).
	NoCluster bool
	// Progress, when set, is told the rows loaded so far.
	Progress func(done, total int64)
}

// chunk is how many rows one INSERT adds: progress shows, and MariaDB
// commits each chunk.
const chunk = 50_000

// Create makes and fills the table on the session's database.
func Create(ctx context.Context, c *dbconn.Conn, o Options) error {
	if o.Rows < 2 {
		return fmt.Errorf("the table needs at least 2 rows, not %d", o.Rows)
	}
	switch c.Engine() {
	case "postgres":
		return createPostgres(ctx, c, o)
	case "mariadb":
		return createMariaDB(ctx, c, o)
	}
	return fmt.Errorf("no dialect of the seed's table for engine %q", c.Engine())
}

// JOf is j of row i: the seed's alternation.
func JOf(i, rows int64) int64 {
	if i%2 == 0 {
		return i
	}
	return rows - i
}

func createPostgres(ctx context.Context, c *dbconn.Conn, o Options) error {
	ts := ""
	if o.Tablespace != "" {
		ts = " TABLESPACE " + o.Tablespace
	}
	if err := c.Exec(ctx, "BEGIN",
		"CREATE TABLE "+Table+" (i int NOT NULL, j int NOT NULL, dt timestamp, filler char("+strconv.Itoa(FillerBytes)+") NOT NULL)"+ts,
		"ALTER TABLE "+Table+" ALTER COLUMN filler SET STORAGE PLAIN"); err != nil {
		return rollback(ctx, c, err)
	}
	for lo := int64(1); lo <= o.Rows; lo += chunk {
		hi := min(lo+chunk-1, o.Rows)
		q := fmt.Sprintf("INSERT INTO %s SELECT i, CASE WHEN i %% 2 = 0 THEN i ELSE %d - i END, "+
			"timestamp '2008-08-25' + i * interval '1 millisecond', 'abc' FROM generate_series(%d, %d) AS i", Table, o.Rows, lo, hi)
		if err := c.Exec(ctx, q); err != nil {
			return rollback(ctx, c, err)
		}
		if o.Progress != nil {
			o.Progress(hi, o.Rows)
		}
	}
	var stmts []string
	if !o.NoCluster {
		stmts = append(stmts, "CREATE INDEX "+IndexI+" ON "+Table+" (i)"+ts, "CLUSTER "+Table+" USING "+IndexI)
	}
	stmts = append(stmts, "CREATE INDEX "+IndexJ+" ON "+Table+" (j)"+ts, "COMMIT")
	if err := c.Exec(ctx, stmts...); err != nil {
		return rollback(ctx, c, err)
	}
	return c.Exec(ctx, "VACUUM (ANALYZE) "+Table)
}

func rollback(ctx context.Context, c *dbconn.Conn, err error) error {
	_ = c.Exec(context.WithoutCancel(ctx), "ROLLBACK")
	return fmt.Errorf("make the seed's table: %w", err)
}

func createMariaDB(ctx context.Context, c *dbconn.Conn, o Options) error {
	dir := ""
	if o.DataDirectory != "" {
		dir = " DATA DIRECTORY = '" + strings.ReplaceAll(o.DataDirectory, "'", "''") + "'"
	}
	if err := c.Exec(ctx, "CREATE TABLE "+Table+" (i int NOT NULL, j int NOT NULL, dt datetime(3), "+
		"filler varchar("+strconv.Itoa(FillerBytes)+") CHARACTER SET latin1 NOT NULL, PRIMARY KEY (i)) ENGINE=InnoDB"+dir); err != nil {
		return fmt.Errorf("make the seed's table: %w", err)
	}
	for lo := int64(1); lo <= o.Rows; lo += chunk {
		hi := min(lo+chunk-1, o.Rows)
		q := fmt.Sprintf("INSERT INTO %s SELECT seq, IF(seq %% 2 = 0, seq, %d - seq), "+
			"TIMESTAMP'2008-08-25 00:00:00' + INTERVAL seq * 1000 MICROSECOND, RPAD('abc', %d, ' ') FROM seq_%d_to_%d",
			Table, o.Rows, FillerBytes, lo, hi)
		if err := c.Exec(ctx, q); err != nil {
			return fmt.Errorf("fill the seed's table: %w", err)
		}
		if o.Progress != nil {
			o.Progress(hi, o.Rows)
		}
	}
	if err := c.Exec(ctx, "ALTER TABLE "+Table+" ADD INDEX "+IndexJ+" (j)", "ANALYZE TABLE "+Table); err != nil {
		return fmt.Errorf("index the seed's table: %w", err)
	}
	return nil
}

// Layout is where the table's rows are: what a scan and a lookup touch.
type Layout struct {
	Rows int64
	// TablePages are the pages a full scan reads: PostgreSQL's heap,
	// InnoDB's clustered index leaves.
	TablePages int64
	// IndexPages are the pages of the index on j (PostgreSQL: the whole
	// index; InnoDB: its leaves).
	IndexPages int64
	// PageBytes is the engine's page size.
	PageBytes int64
}

// RowsPerPage is how many rows a page of the table holds on average.
func (l Layout) RowsPerPage() float64 { return float64(l.Rows) / float64(l.TablePages) }

// TableBytes are the bytes a full scan reads.
func (l Layout) TableBytes() int64 { return l.TablePages * l.PageBytes }

// ReadLayout reads the table's layout from the engine's catalogue (InnoDB's
// persistent statistics, which ANALYZE TABLE refreshed).
func ReadLayout(ctx context.Context, c *dbconn.Conn) (Layout, error) {
	var l Layout
	var err error
	if l.Rows, err = c.Int(ctx, "SELECT count(*) FROM "+Table); err != nil {
		return l, err
	}
	switch c.Engine() {
	case "postgres":
		if l.PageBytes, err = c.Int(ctx, "SELECT current_setting('block_size')::int"); err != nil {
			return l, err
		}
		if l.TablePages, err = c.Int(ctx, fmt.Sprintf("SELECT pg_relation_size('%s') / current_setting('block_size')::int", Table)); err != nil {
			return l, err
		}
		if l.IndexPages, err = c.Int(ctx, fmt.Sprintf("SELECT pg_relation_size('%s') / current_setting('block_size')::int", IndexJ)); err != nil {
			return l, err
		}
	case "mariadb":
		if l.PageBytes, err = c.Int(ctx, "SELECT @@innodb_page_size"); err != nil {
			return l, err
		}
		leaves := func(index string) (int64, error) {
			return c.Int(ctx, "SELECT stat_value FROM mysql.innodb_index_stats WHERE database_name = DATABASE() AND table_name = '"+Table+
				"' AND index_name = '"+index+"' AND stat_name = 'n_leaf_pages'")
		}
		if l.TablePages, err = leaves("PRIMARY"); err != nil {
			return l, fmt.Errorf("the clustered index's leaf pages (InnoDB's persistent statistics): %w", err)
		}
		if l.IndexPages, err = leaves(IndexJ); err != nil {
			return l, fmt.Errorf("the index on j's leaf pages (InnoDB's persistent statistics): %w", err)
		}
	default:
		return l, fmt.Errorf("no layout of the seed's table on engine %q", c.Engine())
	}
	if l.TablePages <= 0 {
		return l, fmt.Errorf("the table has %d pages", l.TablePages)
	}
	return l, nil
}
