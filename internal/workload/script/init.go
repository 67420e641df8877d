package script

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"

	"github.com/dbrig/dbrig/internal/engine"
	"github.com/dbrig/dbrig/internal/engine/mariadb"
	"github.com/dbrig/dbrig/internal/engine/postgres"
)

// pgbench's rows per unit of scale, and the scale from which account ids
// need 64 bits (pgbench switches at 20,000, short of the real 21,474).
const (
	branchesPerScale = 1
	tellersPerScale  = 10
	accountsPerScale = 100_000
	bigintScale      = 20_000
)

// table is one of pgbench's tables: its columns (with 32-bit or 64-bit
// account ids) and how its rows are made.
type table struct {
	name     string
	cols     string
	perScale int64
	row      func(b []byte, i int64) []byte // tab-separated, \N for NULL
}

// pgbenchTables are pgbench's four tables as its -i makes them: branches
// and tellers with a NULL filler, accounts with a blank one, history empty.
func pgbenchTables(scale int, mariaDB bool) []table {
	aid := "int"
	if scale >= bigintScale {
		aid = "bigint"
	}
	mtime := "timestamp"
	if mariaDB {
		mtime = "datetime" // MariaDB's TIMESTAMP may default to now and update itself
	}
	return []table{
		{name: "pgbench_history", cols: "tid int,bid int,aid " + aid + ",delta int,mtime " + mtime + ",filler char(22)"},
		{name: "pgbench_tellers", cols: "tid int not null,bid int,tbalance int,filler char(84)", perScale: tellersPerScale,
			row: func(b []byte, i int64) []byte {
				b = strconv.AppendInt(b, i+1, 10)
				b = append(b, '\t')
				b = strconv.AppendInt(b, i/tellersPerScale+1, 10)
				return append(b, "\t0\t\\N\n"...)
			}},
		{name: "pgbench_accounts", cols: "aid " + aid + " not null,bid int,abalance int,filler char(84)", perScale: accountsPerScale,
			row: func(b []byte, i int64) []byte {
				b = strconv.AppendInt(b, i+1, 10)
				b = append(b, '\t')
				b = strconv.AppendInt(b, i/accountsPerScale+1, 10)
				return append(b, "\t0\t\n"...)
			}},
		{name: "pgbench_branches", cols: "bid int not null,bbalance int,filler char(88)", perScale: branchesPerScale,
			row: func(b []byte, i int64) []byte {
				b = strconv.AppendInt(b, i+1, 10)
				return append(b, "\t0\t\\N\n"...)
			}},
	}
}

// key is a table's primary key column (history has none).
func (t table) key() string {
	switch t.name {
	case "pgbench_tellers":
		return "tid"
	case "pgbench_accounts":
		return "aid"
	case "pgbench_branches":
		return "bid"
	}
	return ""
}

// rowReader makes a table's rows on demand, as COPY and LOAD DATA read
// them, without holding the table in memory.
type rowReader struct {
	t        table
	next, to int64
	buf      bytes.Buffer
	scratch  []byte
	done     *atomic.Int64
}

func (r *rowReader) Read(p []byte) (int, error) {
	for r.buf.Len() < len(p) && r.next < r.to {
		r.scratch = r.t.row(r.scratch[:0], r.next)
		r.buf.Write(r.scratch)
		r.next++
		r.done.Add(1)
	}
	if r.buf.Len() == 0 {
		return 0, io.EOF
	}
	return r.buf.Read(p)
}

// Init makes pgbench's tables at a scale (pgbench -i -s SCALE: drop,
// create, load, vacuum or analyze, primary keys), on PostgreSQL with COPY
// FREEZE in the transaction that truncates them, on MariaDB with LOAD DATA
// LOCAL into tables keyed from the start (InnoDB clusters rows by their
// key, so loading in key order is the fast way). progress, when set,
// receives rows loaded and rows to load.
func Init(ctx context.Context, login engine.Conn, scale int, progress func(done, total int64)) error {
	if scale < 1 {
		return fmt.Errorf("scale %d: at least 1", scale)
	}
	var total int64
	for _, t := range pgbenchTables(scale, false) {
		total += t.perScale * int64(scale)
	}
	var done atomic.Int64
	report := func() {
		if progress != nil {
			progress(done.Load(), total)
		}
	}
	switch login.Engine {
	case postgres.Name:
		return initPostgres(ctx, login, scale, &done, report)
	case mariadb.Name:
		return initMaria(ctx, login, scale, &done, report)
	}
	return fmt.Errorf("pgbench's tables: no %s dialect", login.Engine)
}

func initPostgres(ctx context.Context, login engine.Conn, scale int, done *atomic.Int64, report func()) error {
	cfg, err := postgres.ConnInfoOf(login).ConnConfig()
	if err != nil {
		return err
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return fmt.Errorf("connect to %s: %w", login, err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	exec := func(q string) error {
		if _, err := conn.Exec(ctx, q); err != nil {
			return fmt.Errorf("%s: %w", q, err)
		}
		return nil
	}
	tables := pgbenchTables(scale, false)
	names := make([]string, len(tables))
	for i, t := range tables {
		names[i] = t.name
	}
	steps := []string{"drop table if exists " + strings.Join(names, ", ")}
	for _, t := range tables {
		q := "create table " + t.name + "(" + t.cols + ")"
		if t.name != "pgbench_history" {
			q += " with (fillfactor=100)"
		}
		steps = append(steps, q)
	}
	steps = append(steps, "begin", "truncate table "+strings.Join(names, ", "))
	for _, q := range steps {
		if err := exec(q); err != nil {
			return err
		}
	}
	// Branches, tellers, accounts: the order pgbench loads them in.
	for _, i := range []int{3, 1, 2} {
		t := tables[i]
		r := &rowReader{t: t, to: t.perScale * int64(scale), done: done}
		if _, err := conn.PgConn().CopyFrom(ctx, r, "copy "+t.name+" from stdin with (freeze on)"); err != nil {
			return fmt.Errorf("copy %s: %w", t.name, err)
		}
		report()
	}
	steps = []string{"commit"}
	for _, t := range []table{tables[3], tables[1], tables[2], tables[0]} {
		steps = append(steps, "vacuum analyze "+t.name)
	}
	for _, i := range []int{3, 1, 2} {
		steps = append(steps, "alter table "+tables[i].name+" add primary key ("+tables[i].key()+")")
	}
	for _, q := range steps {
		if err := exec(q); err != nil {
			return err
		}
	}
	return nil
}

var loadSeq atomic.Int64

func initMaria(ctx context.Context, login engine.Conn, scale int, done *atomic.Int64, report func()) error {
	db, err := mariadb.Open(ctx, login)
	if err != nil {
		return err
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	tables := pgbenchTables(scale, true)
	names := make([]string, len(tables))
	for i, t := range tables {
		names[i] = t.name
	}
	steps := []string{"DROP TABLE IF EXISTS " + strings.Join(names, ", ")}
	for _, t := range tables {
		cols := t.cols
		if k := t.key(); k != "" {
			cols += ", PRIMARY KEY (" + k + ")"
		}
		steps = append(steps, "CREATE TABLE "+t.name+" ("+cols+") ENGINE=InnoDB")
	}
	for _, q := range steps {
		if _, err := db.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("%s: %w", q, err)
		}
	}
	for _, i := range []int{3, 1, 2} {
		if err := loadMaria(ctx, db, tables[i], scale, done); err != nil {
			return err
		}
		report()
	}
	for _, t := range tables {
		rows, err := db.QueryContext(ctx, "ANALYZE TABLE "+t.name)
		if err != nil {
			return fmt.Errorf("analyze %s: %w", t.name, err)
		}
		rows.Close()
	}
	return nil
}

// loadMaria streams a table's rows through LOAD DATA LOCAL INFILE, the
// driver reading them from a registered reader; a server that refuses
// local files (local_infile off) gets them as multi-row INSERTs.
func loadMaria(ctx context.Context, db *sql.DB, t table, scale int, done *atomic.Int64) error {
	name := fmt.Sprintf("dbrig-script-%s-%d", t.name, loadSeq.Add(1))
	r := &rowReader{t: t, to: t.perScale * int64(scale), done: done}
	mysql.RegisterReaderHandler(name, func() io.Reader { return r })
	defer mysql.DeregisterReaderHandler(name)
	_, err := db.ExecContext(ctx, "LOAD DATA LOCAL INFILE 'Reader::"+name+"' INTO TABLE "+t.name)
	var myErr *mysql.MySQLError
	if errors.As(err, &myErr) && (myErr.Number == 1148 || myErr.Number == 3948) && r.next == 0 {
		return insertMaria(ctx, db, t, scale, done)
	}
	if err != nil {
		return fmt.Errorf("load %s: %w", t.name, err)
	}
	return nil
}

// insertMaria loads a table with INSERTs of 1,000 rows in one transaction.
func insertMaria(ctx context.Context, db *sql.DB, t table, scale int, done *atomic.Int64) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	total := t.perScale * int64(scale)
	var q, row []byte
	for i := int64(0); i < total; {
		q = append(q[:0], "INSERT INTO "+t.name+" VALUES "...)
		for n := 0; n < 1000 && i < total; n, i = n+1, i+1 {
			if n > 0 {
				q = append(q, ',')
			}
			row = t.row(row[:0], i)
			q = append(q, '(')
			for j, f := range strings.Split(strings.TrimSuffix(string(row), "\n"), "\t") {
				if j > 0 {
					q = append(q, ',')
				}
				switch f {
				case `\N`:
					q = append(q, "NULL"...)
				case "":
					q = append(q, "''"...)
				default:
					q = append(q, f...)
				}
			}
			q = append(q, ')')
			done.Add(1)
		}
		if _, err := tx.ExecContext(ctx, string(q)); err != nil {
			return fmt.Errorf("insert into %s: %w", t.name, err)
		}
	}
	return tx.Commit()
}

// countBranches reads the rows of pgbench_branches, which is the scale
// pgbench's built-in scripts run at.
func countBranches(ctx context.Context, login engine.Conn) (int64, error) {
	const q = "SELECT count(*) FROM pgbench_branches"
	var n int64
	switch login.Engine {
	case postgres.Name:
		cfg, err := postgres.ConnInfoOf(login).ConnConfig()
		if err != nil {
			return 0, err
		}
		conn, err := pgx.ConnectConfig(ctx, cfg)
		if err != nil {
			return 0, fmt.Errorf("connect to %s: %w", login, err)
		}
		defer conn.Close(context.WithoutCancel(ctx))
		err = conn.QueryRow(ctx, q).Scan(&n)
		return n, err
	case mariadb.Name:
		db, err := mariadb.Open(ctx, login)
		if err != nil {
			return 0, err
		}
		defer db.Close()
		err = db.QueryRowContext(ctx, q).Scan(&n)
		return n, err
	}
	return 0, fmt.Errorf("no %s dialect", login.Engine)
}
