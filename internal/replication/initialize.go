package replication

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/dbrig/dbrig/internal/engine/postgres"
)

func orConn(c, def postgres.ConnInfo) postgres.ConnInfo {
	if c.Host == "" {
		return def
	}
	return c
}

// initSnapshot copies every published table from the slot's exported
// snapshot into the subscriber in one subscriber transaction, which also
// creates missing tables and records the subscription's starting point: the
// subscriber holds either everything or nothing. The publisher's side runs
// in opts.Streams sessions of the same snapshot.
func initSnapshot(ctx context.Context, p *plan, opts SetupOptions, streams *pending[snapshotSessions], snapshot string, reads []*ddlReads, rec subscriptionRecord, res *SetupResult) error {
	cfg := p.cfg
	subCI := orConn(opts.InitSubscriber, cfg.Subscriber)
	start := time.Now()
	// Each statement in one round trip, none prepared first (see
	// copyInto).
	dst, err := pgxConnectMode(ctx, subCI, "dbrig snapshot", pgx.QueryExecModeExec)
	if err != nil {
		return fmt.Errorf("snapshot: subscriber: %w", err)
	}
	defer dst.Close(context.WithoutCancel(ctx))
	p.made.subPIDs = append(p.made.subPIDs, dst.PgConn().PID())
	ddl, err := missingTablesDDL(ctx, p, dst, reads)
	if err != nil {
		return fmt.Errorf("snapshot: %w", err)
	}
	sessions, err := streams.take()
	if err != nil {
		return fmt.Errorf("snapshot: publisher: %w", err)
	}
	defer sessions.close(ctx)
	src := newSnapshotCopy(sessions, snapshot)
	watch := newCopyWatch(opts, len(p.tables))
	watch.start()
	defer watch.stop()
	err = copyInto(ctx, p, dst, src, ddl, watch, rec, res)
	if err != nil {
		return err
	}
	res.InitDuration = time.Since(start)
	return nil
}

// copyInto copies every table from the snapshot's sessions into the
// subscriber in one transaction of dst, which also creates the missing
// tables and records the subscription. From the publisher's site each
// round trip to the subscriber crosses the WAN, so the statements go
// together: each COPY in one query after BEGIN and the first table's DDL,
// or after the rest of the table before it (its keys and indexes, its
// sequences' positions) and its own DDL, and the last table's rest with
// the subscription's record and COMMIT. A failure leaves the transaction
// open on dst, which the caller closes.
func copyInto(ctx context.Context, p *plan, dst *pgx.Conn, src *snapshotCopy, ddl map[TableName]*tableDDL,
	watch *copyWatch, rec subscriptionRecord, res *SetupResult) error {
	ahead := []string{"BEGIN"}
	for i, t := range p.tables {
		d := ddl[t.Name]
		if d != nil {
			ahead = append(ahead, d.before...)
		}
		var copied atomic.Int64
		watch.table(i+1, t.Name.String(), t.size.bytes, &copied)
		tc, err := copyTableStreams(ctx, src, dst, t, ahead, &copied)
		if err != nil {
			return err
		}
		ahead = nil
		if d != nil {
			ahead = append(append(ahead, d.after...), d.setSequences()...)
		}
		res.Tables = append(res.Tables, tc)
		res.InitBytes += tc.Bytes
		p.cfg.Logger.Info("table copied", "table", t.Name.String(), "rows", tc.Rows, "bytes", tc.Bytes, "streams", tc.Streams)
	}
	b := &pgx.Batch{}
	for _, q := range ahead {
		b.Queue(q)
	}
	rec.queue(b)
	b.Queue("COMMIT")
	if err := dst.SendBatch(ctx, b).Close(); err != nil {
		return fmt.Errorf("snapshot: the subscriber's keys, indexes and sequences, and the subscription's record: %w", err)
	}
	return nil
}

// missingTablesDDL builds the DDL of every published table the subscriber
// lacks from its catalog rows (reads, read before the slot with
// markAndReadDDL) and the positions of the sequences they use, read now,
// after the slot, so that none is older than the snapshot (one more
// round trip, where there are any).
func missingTablesDDL(ctx context.Context, p *plan, sub *pgx.Conn, reads []*ddlReads) (map[TableName]*tableDDL, error) {
	out := map[TableName]*tableDDL{}
	if len(reads) == 0 {
		return out, nil
	}
	positions, existing := map[string]sequencePos{}, map[string]bool{}
	pb, sb := &pgx.Batch{}, &pgx.Batch{}
	for _, r := range reads {
		for _, s := range r.seqs {
			if _, ok := positions[s.name]; ok {
				continue
			}
			positions[s.name] = sequencePos{name: s.name}
			pb.Queue("SELECT last_value, is_called FROM " + s.name).QueryRow(func(row pgx.Row) error {
				pos := sequencePos{name: s.name}
				if err := row.Scan(&pos.last, &pos.isCalled); err != nil {
					return fmt.Errorf("read sequence %s: %w", s.name, err)
				}
				positions[s.name] = pos
				return nil
			})
			if s.deptype != "i" {
				sb.Queue("SELECT to_regclass($1) IS NOT NULL", s.name).QueryRow(func(row pgx.Row) error {
					var ok bool
					err := row.Scan(&ok)
					existing[s.name] = ok
					return err
				})
			}
		}
	}
	if pb.Len() > 0 {
		if err := p.pub.SendBatch(ctx, pb).Close(); err != nil {
			return nil, fmt.Errorf("publisher: %w", err)
		}
	}
	if sb.Len() > 0 {
		if err := sub.SendBatch(ctx, sb).Close(); err != nil {
			return nil, fmt.Errorf("subscriber: %w", err)
		}
	}
	for _, r := range reads {
		out[r.ti.Name] = r.build(positions, existing)
	}
	return out, nil
}

// Carrier moves a backup archive from the publisher's site, where pg_dump
// writes it, to the subscriber's, where pg_restore reads it: the seed's
// fastest initialization shipped a compressed backup file across the WAN.
// It returns the archive as read at the far end; closing that ends the
// carrying. Nil is a pipe in this process.
type Carrier func(ctx context.Context, archive io.Reader) (io.ReadCloser, error)

// initBackup streams the published tables from pg_dump (custom format, in
// the slot's exported snapshot, through opts.InitPublisher) through the
// carrier into pg_restore in one transaction (through opts.InitSubscriber).
func initBackup(ctx context.Context, p *plan, opts SetupOptions, snapshot string, reads []*ddlReads, subRow func(context.Context, pgx.Tx) error, res *SetupResult) error {
	cfg := p.cfg
	pubCI := orConn(opts.InitPublisher, cfg.Publisher)
	subCI := orConn(opts.InitSubscriber, cfg.Subscriber)
	bin := opts.Binaries
	if bin.Dir == "" {
		var err error
		if bin, err = postgres.FindBinaries(ctx, ""); err != nil {
			return fmt.Errorf("backup: %w", err)
		}
	}
	start := time.Now()
	// Schemas first (pg_dump --table leaves them out); tables that exist
	// already (empty) take the data only.
	dst, err := pgxConnect(ctx, subCI, "dbrig backup")
	if err != nil {
		return fmt.Errorf("backup: subscriber: %w", err)
	}
	defer dst.Close(context.WithoutCancel(ctx))
	p.made.subPIDs = append(p.made.subPIDs, dst.PgConn().PID())
	dataOnly := p.restoresDataOnly()
	var ddl map[TableName]*tableDDL
	if dataOnly {
		if ddl, err = missingTablesDDL(ctx, p, dst, reads); err != nil {
			return fmt.Errorf("backup: %w", err)
		}
	}
	for _, t := range p.tables {
		if _, err := dst.Exec(ctx, "CREATE SCHEMA IF NOT EXISTS "+quoteIdent(t.Name.Schema)); err != nil {
			return fmt.Errorf("backup: subscriber: create schema %s: %w", t.Name.Schema, err)
		}
		if d := ddl[t.Name]; d != nil {
			if err := execAll(ctx, dst, append(d.before, d.after...)); err != nil {
				return fmt.Errorf("backup: subscriber: create table %s: %w", t.Name, err)
			}
		}
	}
	rargs := []string{"--single-transaction", "--exit-on-error", "--no-owner", "--no-privileges", "--dbname=" + subCI.Database}
	if dataOnly {
		rargs = append(rargs, "--data-only")
	}
	dumpArgs := backupDumpArgs(snapshot, tableNames(p.tables))
	open := func(ctx context.Context) (archiveSource, error) {
		if opts.Shipper != nil {
			return opts.Shipper.open(ctx, ShipRequest{Protocol: ShipProtocol, Publisher: pubCI.Seal(), Snapshot: snapshot, Tables: tableNames(p.tables)})
		}
		return startDump(ctx, bin, dumpArgs, pubCI, opts.Carrier)
	}
	if err := dumpRestore(ctx, bin, open, rargs, subCI, res); err != nil {
		return err
	}
	if err := pgx.BeginFunc(ctx, dst, func(tx pgx.Tx) error { return subRow(ctx, tx) }); err != nil {
		return err
	}
	res.InitDuration = time.Since(start)
	for _, t := range p.tables {
		var n int64
		if err := dst.QueryRow(ctx, "SELECT count(*) FROM "+t.Name.Quoted()).Scan(&n); err == nil {
			res.Tables = append(res.Tables, TableCopy{Table: t.Name.String(), Rows: n})
		}
	}
	return nil
}

func tableNames(tables []*tableInfo) []TableName {
	names := make([]TableName, len(tables))
	for i, t := range tables {
		names[i] = t.Name
	}
	return names
}

// archiveSource is a backup archive as the subscriber's site reads it.
// Close ends it and waits for whatever makes it.
type archiveSource interface {
	io.ReadCloser
	// cause is the maker's own failure (pg_dump's, the ship's), set when it
	// failed before the restore was done with it: the reason to give.
	cause() error
	// rawBytes is the archive's size so far.
	rawBytes() int64
	// took is how long its maker ran, once it has stopped.
	took() time.Duration
}

// dumpRestore runs pg_restore on the archive that open starts making, the
// archive streaming into it as it is made.
func dumpRestore(ctx context.Context, bin postgres.Binaries, open func(context.Context) (archiveSource, error), restoreArgs []string, subCI postgres.ConnInfo,
	res *SetupResult) error {
	interrupted := ctx.Err
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	archive, err := open(ctx)
	if err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	restore := toolCmd(ctx, bin.Path("pg_restore"), restoreArgs, subCI)
	restore.Stdin = archive
	var restoreOut bytes.Buffer
	restore.Stdout, restore.Stderr = &restoreOut, &restoreOut
	if err := restore.Start(); err != nil {
		cancel()
		archive.Close()
		return fmt.Errorf("backup: start pg_restore: %w", err)
	}
	rerr := restore.Wait()
	if rerr != nil {
		cancel() // the archive's maker may be blocked writing to a reader that is gone
	}
	aerr := archive.Close()
	res.DumpDuration = archive.took()
	res.InitBytes = archive.rawBytes()
	if st, ok := archive.(*shipStream); ok {
		res.ShippedBytes = st.compressed.load()
	}
	switch cause := archive.cause(); {
	case interrupted() != nil:
		return fmt.Errorf("backup: %w", interrupted()) // what was killed for it says nothing more
	case cause != nil:
		return fmt.Errorf("backup: %w", cause)
	case rerr != nil:
		return fmt.Errorf("backup: restore into %s: %s: %w: %s", subCI, bin.Path("pg_restore"), rerr, strings.TrimSpace(lastLines(restoreOut.String(), 5)))
	case aerr != nil:
		return fmt.Errorf("backup: %w", aerr)
	}
	return nil
}

// localDump is pg_dump run here, its archive moved by a carrier (nil: a
// pipe in this process).
type localDump struct {
	io.Reader
	counted *countingReader
	carried io.ReadCloser
	dump    *exec.Cmd
	dumped  chan struct{}
	err     error
	desc    string
	stderr  *tailBuffer
	start   time.Time
	ran     time.Duration
	ctx     context.Context
	closed  sync.Once
}

// startDump starts pg_dump with args on the publisher, its archive going
// through carry.
func startDump(ctx context.Context, bin postgres.Binaries, args []string, pubCI postgres.ConnInfo, carry Carrier) (*localDump, error) {
	dump := toolCmd(ctx, bin.Path("pg_dump"), args, pubCI)
	d := &localDump{dump: dump, dumped: make(chan struct{}), stderr: &tailBuffer{}, ctx: ctx,
		desc: fmt.Sprintf("dump the published tables from %s: %s", pubCI, bin.Path("pg_dump"))}
	dump.Stderr = d.stderr
	// A pipe of our own, not StdoutPipe: Wait closes that one as soon as
	// pg_dump exits, which may be before the archive's last bytes are read.
	out, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("pg_dump: %w", err)
	}
	dump.Stdout = w
	d.start = time.Now()
	err = dump.Start()
	w.Close()
	if err != nil {
		out.Close()
		return nil, fmt.Errorf("start pg_dump: %w", err)
	}
	go func() { // owned by d: Close waits for it
		d.err = dump.Wait()
		d.ran = time.Since(d.start)
		close(d.dumped)
	}()
	d.counted = &countingReader{r: out}
	d.Reader = d.counted
	if carry != nil {
		if d.carried, err = carry(ctx, d.counted); err != nil {
			dump.Process.Kill()
			<-d.dumped
			out.Close()
			return nil, fmt.Errorf("ship the archive: %w", err)
		}
		d.Reader = d.carried
	}
	return d, nil
}

func (d *localDump) Close() error {
	d.closed.Do(func() {
		if d.carried != nil {
			d.carried.Close()
		}
		<-d.dumped
		d.counted.r.(*os.File).Close()
	})
	if d.err != nil && d.ctx.Err() != nil {
		return fmt.Errorf("%s: %w", d.desc, d.err)
	}
	return nil
}

func (d *localDump) cause() error {
	select {
	case <-d.dumped:
	default:
		return nil
	}
	if d.err == nil || d.ctx.Err() != nil {
		return nil
	}
	return fmt.Errorf("%s: %w: %s", d.desc, d.err, strings.TrimSpace(lastLines(d.stderr.String(), 5)))
}

func (d *localDump) rawBytes() int64 { return d.counted.load() }

func (d *localDump) took() time.Duration { return d.ran }

// countingReader counts what is read through it.
type countingReader struct {
	r io.Reader
	n atomic.Int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}

func (c *countingReader) load() int64 { return c.n.Load() }

// toolCmd is a PostgreSQL client program with a login in its environment
// (never on its command line).
func toolCmd(ctx context.Context, path string, args []string, ci postgres.ConnInfo) *exec.Cmd {
	cmd := exec.CommandContext(ctx, path, args...)
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PG") {
			env = append(env, kv)
		}
	}
	cmd.Env = append(env, ci.Env()...)
	return cmd
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
