package replication

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/dbrig/dbrig/internal/engine/postgres"
)

// LogReaderConfig configures a log reader agent.
type LogReaderConfig struct {
	// Publisher is the published database; the log reader opens a logical
	// replication connection to it and streams the slot with pgoutput.
	Publisher postgres.ConnInfo
	// Distribution is the distribution database (on the publisher's
	// server, normally reached directly).
	Distribution postgres.ConnInfo
	// Publication names the publication and its slot (default "dbrig").
	Publication string
	// CommitInterval is the longest a received source transaction waits
	// before the log reader commits it into the distribution database
	// (default 20 ms). Transactions arriving together share a commit.
	CommitInterval time.Duration
	// MaxBatchBytes commits once this much is pending (default 8 MiB).
	MaxBatchBytes int
	// StatusInterval is how often the log reader reports its position to
	// the publisher when nothing else happens (default 5 s).
	StatusInterval time.Duration
	// CleanupInterval is how often the log reader deletes the commands every
	// subscription has applied (default 10 s; negative: never). Relation
	// commands stay: an agent needs them to start anywhere.
	CleanupInterval time.Duration
	// NoRetry returns the first error instead of reconnecting.
	NoRetry bool
	Logger  *slog.Logger
}

// LogReaderStats describe what a log reader has done.
type LogReaderStats struct {
	Transactions int64 `json:"transactions"` // source transactions stored
	Commands     int64 `json:"commands"`     // changes stored (inserts, updates, deletes, truncates)
	Bytes        int64 `json:"bytes"`        // bytes of pgoutput messages stored
	StoredBytes  int64 `json:"stored_bytes"` // what they take in the distribution database, compressed
	Commits      int64 `json:"commits"`      // distribution transactions
	Skipped      int64 `json:"skipped"`      // transactions received again after a restart and skipped
	CleanedUp    int64 `json:"cleaned_up"`   // applied commands deleted from the distribution database
	LastCmdID    int64 `json:"last_cmd_id"`
	// ConfirmedLSN is the slot position confirmed to the publisher.
	ConfirmedLSN LSN `json:"confirmed_lsn"`
	Restarts     int `json:"restarts"`
}

// LogReader captures the committed changes of a publication from the
// publisher's write-ahead log (logical decoding, pgoutput) and stores them
// in commit order in the distribution database's commands table. The slot's
// confirmed position moves only after the commands are committed there, and
// a restarted log reader skips transactions it already stored, so every
// source transaction is stored exactly once.
type LogReader struct {
	cfg   LogReaderConfig
	place place
	mu    sync.Mutex
	stats LogReaderStats
}

// NewLogReader checks the configuration and returns a log reader.
func NewLogReader(cfg LogReaderConfig) (*LogReader, error) {
	if cfg.Publication == "" {
		cfg.Publication = DefaultPublication
	}
	if err := validateName("publication", cfg.Publication); err != nil {
		return nil, &UsageError{Err: err}
	}
	if cfg.CommitInterval <= 0 {
		cfg.CommitInterval = 20 * time.Millisecond
	}
	if cfg.MaxBatchBytes <= 0 {
		cfg.MaxBatchBytes = 8 << 20
	}
	if cfg.StatusInterval <= 0 {
		cfg.StatusInterval = 5 * time.Second
	}
	if cfg.CleanupInterval == 0 {
		cfg.CleanupInterval = 10 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &LogReader{cfg: cfg}, nil
}

// Stats returns a snapshot of the counters.
func (r *LogReader) Stats() LogReaderStats {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stats
}

// Run streams until ctx is cancelled (then it commits what it holds and
// returns ctx's error) or an error that reconnecting does not cure.
func (r *LogReader) Run(ctx context.Context) error {
	r.place = thisPlace("")
	err := retryLoop(ctx, r.cfg.Logger, "log reader", r.cfg.NoRetry, r.runOnce, func() {
		r.mu.Lock()
		r.stats.Restarts++
		r.mu.Unlock()
	})
	cause := err
	if ctx.Err() != nil {
		cause = nil
	}
	markStopped(ctx, r.cfg.Distribution, roleLogReader, r.cfg.Publication, cause)
	return err
}

// cleanup deletes, every CleanupInterval, the commands every subscription
// has applied durably (see CleanupDistribution).
func (r *LogReader) cleanup(ctx context.Context) {
	cfg := r.cfg
	t := time.NewTicker(cfg.CleanupInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		n, err := CleanupDistribution(ctx, cfg.Distribution, cfg.Publication)
		if err != nil {
			if ctx.Err() == nil {
				cfg.Logger.Warn("clean up the distribution database", "err", err)
			}
			continue
		}
		r.mu.Lock()
		r.stats.CleanedUp += n
		r.mu.Unlock()
	}
}

// CleanupDistribution deletes the chunks of a publication's command stream
// that its subscription has applied durably, and returns how many commands
// they held. Its agent reports there only commits the subscriber has
// flushed, so the position lags behind the subscriber's own record and is
// never ahead of what a crash of the subscriber leaves of it.
func CleanupDistribution(ctx context.Context, distribution postgres.ConnInfo, publication string) (int64, error) {
	if publication == "" {
		publication = DefaultPublication
	}
	c, err := connect(ctx, distribution, "dbrig cleanup")
	if err != nil {
		return 0, err
	}
	defer c.Close(context.WithoutCancel(ctx))
	res := c.ExecParams(ctx, "WITH d AS (DELETE FROM "+commandsTable(publication)+" WHERE last_cmd <= (SELECT applied_cmd_id FROM "+Schema+
		".subscriptions WHERE name = $1) RETURNING last_cmd - first_cmd + 1 AS n) SELECT coalesce(sum(n), 0)::bigint FROM d",
		[][]byte{[]byte(publication)}, nil, nil, nil).Read()
	if res.Err != nil {
		return 0, fmt.Errorf("delete applied commands in %s: %w", distribution, res.Err)
	}
	var n int64
	if len(res.Rows) == 1 {
		n, _ = strconv.ParseInt(string(res.Rows[0][0]), 10, 64)
	}
	return n, nil
}

// notifyChannel is the channel the log reader notifies after each commit.
func notifyChannel(publication string) string { return "dbrig_" + publication }

// lockKey is the advisory lock that makes a role (log reader, agent)
// exclusive for one publication.
func lockKey(role, publication string) string { return "dbrig " + role + " " + publication }

var copyHeader = append([]byte("PGCOPY\n\xff\r\n\x00"), 0, 0, 0, 0, 0, 0, 0, 0)

// logReaderRun is the state of one connected run.
type logReaderRun struct {
	r      *LogReader
	dist   *pgconn.PgConn
	stream *replStream

	nextCmd    int64
	lastCommit LSN // commit LSN of the last stored transaction
	confirmed  LSN // position confirmed to the publisher
	inXact     bool
	skipping   bool
	xactLSN    LSN

	distOpen     bool // a distribution transaction is open
	chunk        chunkBuilder
	codec        *codec
	compress     bool
	stored       []byte
	copyBuf      bytes.Buffer
	relations    [][]byte // Relation messages of the chunk, with their command ids in relIDs
	relIDs       []int64
	storedBytes  int64
	pendingXacts int64
	pendingCmds  int64
	pendingBytes int64
	pendingEnd   LSN
	pendingSince time.Time
}

func (r *LogReader) runOnce(ctx context.Context) error {
	cfg := r.cfg
	dist, err := connect(ctx, cfg.Distribution, logReaderAppName(cfg.Publication))
	if err != nil {
		return fmt.Errorf("distribution database: %w", err)
	}
	defer dist.Close(context.WithoutCancel(ctx))
	res, err := dist.Exec(ctx, "SELECT pg_try_advisory_lock(hashtext("+quoteLiteral(lockKey("log reader", cfg.Publication))+"))").ReadAll()
	if err != nil {
		return fmt.Errorf("distribution database %s: %w", cfg.Distribution, err)
	}
	if string(res[0].Rows[0][0]) != "t" {
		return &busyError{msg: fmt.Sprintf("another log reader is running for publication %q", cfg.Publication)}
	}
	res, err = dist.Exec(ctx, "SELECT r.last_cmd_id, r.last_commit_lsn, r.confirmed_lsn, p.binary_values, p.compression FROM "+Schema+".log_reader r JOIN "+
		Schema+".publication p ON p.name = r.publication WHERE r.publication = "+quoteLiteral(cfg.Publication)).ReadAll()
	if err != nil {
		return fmt.Errorf("read its state in %s: %w", cfg.Distribution, err)
	}
	if len(res[0].Rows) != 1 {
		return fmt.Errorf("publication %q is not set up in the distribution database %s (run setup)", cfg.Publication, cfg.Distribution)
	}
	if err := markRunning(ctx, dist, roleLogReader, cfg.Publication, r.place); err != nil {
		return fmt.Errorf("record the log reader's start in %s: %w", cfg.Distribution, err)
	}
	row := res[0].Rows[0]
	run := &logReaderRun{r: r, dist: dist, codec: getCodec(), compress: string(row[4]) != CompressNone.String()}
	defer putCodec(run.codec)
	fmt.Sscan(string(row[0]), &run.nextCmd)
	run.nextCmd++
	if run.lastCommit, err = ParseLSN(string(row[1])); err != nil {
		return err
	}
	if run.confirmed, err = ParseLSN(string(row[2])); err != nil {
		return err
	}

	rc, err := connectReplication(ctx, cfg.Publisher, logReaderAppName(cfg.Publication))
	if err != nil {
		return err
	}
	stream, err := startReplication(ctx, rc, cfg.Publication, cfg.Publication, run.confirmed, string(row[3]) == "t")
	if err != nil {
		return err
	}
	defer stream.Close()
	run.stream = stream
	cfg.Logger.Info("log reader streaming", "slot", cfg.Publication, "from", run.confirmed, "next_cmd", run.nextCmd)
	r.mu.Lock()
	r.stats.ConfirmedLSN = run.confirmed
	r.mu.Unlock()

	var wg sync.WaitGroup
	if cfg.CleanupInterval > 0 {
		cctx, stopCleanup := context.WithCancel(ctx)
		defer func() { stopCleanup(); wg.Wait() }()
		wg.Go(func() { r.cleanup(cctx) })
	}
	err = run.loop(ctx)
	if ctx.Err() != nil && !run.inXact && run.pendingXacts > 0 {
		// Stopping: store what is complete, so a restart re-reads less.
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		if cerr := run.commit(cctx); cerr != nil {
			cfg.Logger.Warn("commit on stop", "err", cerr)
		}
		cancel()
	}
	return err
}

func (run *logReaderRun) loop(ctx context.Context) error {
	cfg := run.r.cfg
	status := time.NewTicker(cfg.StatusInterval)
	defer status.Stop()
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-status.C:
			if err := run.stream.sendStatus(run.confirmed); err != nil {
				return err
			}
		case <-timer.C:
			if run.pendingXacts > 0 && !run.inXact {
				if err := run.commit(ctx); err != nil {
					return err
				}
			}
		case msg, ok := <-run.stream.messages:
			if !ok {
				if err := run.stream.Err(); err != nil {
					return err
				}
				return errors.New("the replication stream ended")
			}
			if err := run.handle(ctx, msg, timer); err != nil {
				return err
			}
		}
	}
}

// handle takes one message of the replication stream: a keepalive, or
// WAL data carrying a pgoutput message.
func (run *logReaderRun) handle(ctx context.Context, msg []byte, timer *time.Timer) error {
	if len(msg) == 0 {
		return nil
	}
	switch msg[0] {
	case 'k':
		return run.keepalive(msg)
	case 'w':
	default:
		return nil
	}
	xl, err := pglogrepl.ParseXLogData(msg[1:])
	if err != nil {
		return fmt.Errorf("replication stream: %w", err)
	}
	data := xl.WALData
	if len(data) == 0 {
		return nil
	}
	switch data[0] {
	case kindBegin:
		return run.begin(data)
	case kindRelation, kindInsert, kindUpdate, kindDelete, kindTruncate:
		return run.change(ctx, data, xl.WALStart)
	case kindCommit:
		return run.commitXact(ctx, data, timer)
	}
	return nil
}

// keepalive confirms what the server's position shows is stored, and
// answers.
func (run *logReaderRun) keepalive(msg []byte) error {
	ka, err := pglogrepl.ParsePrimaryKeepaliveMessage(msg[1:])
	if err != nil {
		return fmt.Errorf("replication stream: %w", err)
	}
	// Between transactions with nothing pending, everything before the
	// server's position has been received and stored: confirm it, so
	// the slot does not hold WAL for changes outside the publication.
	if !run.inXact && run.pendingXacts == 0 && LSN(ka.ServerWALEnd) > run.confirmed {
		run.confirmed = LSN(ka.ServerWALEnd)
		run.r.mu.Lock()
		run.r.stats.ConfirmedLSN = run.confirmed
		run.r.mu.Unlock()
	}
	// The walsender sends a keepalive each time it catches up: answering
	// every one would be a message each way per transaction for nothing
	// new. The status ticker still reports at its interval.
	if ka.ReplyRequested || (!run.inXact && run.confirmed > run.stream.sent) {
		return run.stream.sendStatus(run.confirmed)
	}
	return nil
}

// begin opens a source transaction, skipped when it was stored before.
func (run *logReaderRun) begin(data []byte) error {
	b, err := parseBegin(data)
	if err != nil {
		return err
	}
	run.inXact = true
	run.xactLSN = LSN(b.FinalLSN)
	// Received again after a restart: stored already.
	run.skipping = LSN(b.FinalLSN) <= run.lastCommit
	if !run.skipping {
		run.addMessage(data)
	}
	return nil
}

// change adds a message inside the transaction to the chunk under way,
// storing the chunk once it is large.
func (run *logReaderRun) change(ctx context.Context, data []byte, walStart pglogrepl.LSN) error {
	if run.skipping {
		return nil
	}
	if !run.inXact {
		return fmt.Errorf("%q message outside a transaction at %s", data[0], walStart)
	}
	run.addMessage(data)
	if data[0] != kindRelation {
		run.pendingCmds++
	}
	if len(run.chunk.raw) >= maxChunkBytes {
		return run.flushChunk(ctx)
	}
	return nil
}

// commitXact ends a source transaction and commits the pending ones when
// enough are pending, nothing more is queued, or the oldest has waited
// CommitInterval; otherwise the timer commits them.
func (run *logReaderRun) commitXact(ctx context.Context, data []byte, timer *time.Timer) error {
	c, err := parseCommit(data)
	if err != nil {
		return err
	}
	run.inXact = false
	if run.skipping {
		run.skipping = false
		run.r.mu.Lock()
		run.r.stats.Skipped++
		run.r.mu.Unlock()
		return nil
	}
	run.addMessage(data)
	run.lastCommit = LSN(c.CommitLSN)
	run.pendingEnd = LSN(c.TransactionEndLSN)
	cfg := &run.r.cfg
	if run.pendingXacts == 0 {
		run.pendingSince = time.Now()
		timer.Reset(cfg.CommitInterval)
	}
	run.pendingXacts++
	if run.pendingBytes >= int64(cfg.MaxBatchBytes) || len(run.stream.messages) == 0 ||
		time.Since(run.pendingSince) >= cfg.CommitInterval {
		return run.commit(ctx)
	}
	return nil
}

// addMessage adds one pgoutput message to the chunk under way, as the
// next command.
func (run *logReaderRun) addMessage(data []byte) {
	run.chunk.add(run.nextCmd, data)
	if data[0] == kindRelation {
		run.relations = append(run.relations, append([]byte(nil), data...))
		run.relIDs = append(run.relIDs, run.nextCmd)
	}
	run.nextCmd++
	run.pendingBytes += int64(len(data))
}

// flushChunk stores the chunk under way (and the Relation messages it
// carries) in the open distribution transaction.
func (run *logReaderRun) flushChunk(ctx context.Context) error {
	c := &run.chunk
	if c.empty() {
		return nil
	}
	if !run.distOpen {
		if _, err := run.dist.Exec(ctx, "BEGIN").ReadAll(); err != nil {
			return fmt.Errorf("distribution database: begin: %w", err)
		}
		run.distOpen = true
	}
	publication := run.r.cfg.Publication
	for i, rel := range run.relations {
		if _, err := run.dist.ExecParams(ctx, "INSERT INTO "+relationsTable(publication)+" (cmd_id, rel_id, data) VALUES ($1, $2, $3)",
			[][]byte{[]byte(itoa(run.relIDs[i])), []byte(strconv.FormatUint(uint64(binary.BigEndian.Uint32(rel[1:5])), 10)), rel},
			nil, []int16{0, 0, 1}, nil).Close(); err != nil {
			return fmt.Errorf("store a table's description in the distribution database: %w", err)
		}
	}
	run.relations, run.relIDs = run.relations[:0], run.relIDs[:0]
	var stored []byte
	if run.compress {
		stored = run.codec.encode(run.stored[:0], c.raw)
	} else {
		stored = append(append(run.stored[:0], chunkRaw), c.raw...)
	}
	run.stored = stored
	run.storedBytes += int64(len(stored))
	w := &run.copyBuf
	w.Reset()
	w.Write(copyHeader)
	var b [8]byte
	field64 := func(v int64) {
		binary.BigEndian.PutUint32(b[:4], 8)
		w.Write(b[:4])
		binary.BigEndian.PutUint64(b[:], uint64(v))
		w.Write(b[:])
	}
	field32 := func(v int64) {
		binary.BigEndian.PutUint32(b[:4], 4)
		w.Write(b[:4])
		binary.BigEndian.PutUint32(b[:4], uint32(v))
		w.Write(b[:4])
	}
	binary.BigEndian.PutUint16(b[:2], 6)
	w.Write(b[:2])
	field64(c.first)
	field64(c.last())
	field32(c.changes)
	field32(c.xacts)
	field32(int64(len(c.raw)))
	binary.BigEndian.PutUint32(b[:4], uint32(len(stored)))
	w.Write(b[:4])
	w.Write(stored)
	w.Write([]byte{0xff, 0xff})
	if _, err := run.dist.CopyFrom(ctx, w, "COPY "+commandsTable(publication)+" (first_cmd, last_cmd, changes, xacts, raw_bytes, data) FROM STDIN (FORMAT binary)"); err != nil {
		return fmt.Errorf("store commands in the distribution database: %w", err)
	}
	c.reset()
	return nil
}

// commit stores the pending transactions, then confirms their end to the
// publisher: the slot moves only past what the distribution database holds.
//
// The commit is synchronous whatever the server's synchronous_commit says:
// it returns, and other sessions see the commands, only once its WAL is
// flushed. Otherwise a crash of the publisher's server could lose commands
// after the slot, saved to disk with the position confirmed, has moved past
// them (the transactions are then lost), or after an agent has applied them
// (the log reader then stores them again under other command ids: it
// describes the tables anew after a restart).
func (run *logReaderRun) commit(ctx context.Context) error {
	if err := run.flushChunk(ctx); err != nil {
		return err
	}
	cfg := run.r.cfg
	last := run.nextCmd - 1
	sql := fmt.Sprintf("SET LOCAL synchronous_commit = local; UPDATE %s.log_reader SET last_cmd_id = %d, last_commit_lsn = '%s', confirmed_lsn = '%s', "+
		"xacts = xacts + %d, commands = commands + %d, bytes = bytes + %d, stored_bytes = stored_bytes + %d, updated_at = now() WHERE publication = %s; NOTIFY %s; COMMIT",
		Schema, last, run.lastCommit, run.pendingEnd, run.pendingXacts, run.pendingCmds, run.pendingBytes, run.storedBytes,
		quoteLiteral(cfg.Publication), quoteIdent(notifyChannel(cfg.Publication)))
	if _, err := run.dist.Exec(ctx, sql).ReadAll(); err != nil {
		return fmt.Errorf("commit commands up to %d in the distribution database: %w", last, err)
	}
	run.distOpen = false
	run.confirmed = max(run.confirmed, run.pendingEnd)
	run.r.mu.Lock()
	s := &run.r.stats
	s.Transactions += run.pendingXacts
	s.Commands += run.pendingCmds
	s.Bytes += run.pendingBytes
	s.StoredBytes += run.storedBytes
	s.Commits++
	s.LastCmdID = last
	s.ConfirmedLSN = run.confirmed
	run.r.mu.Unlock()
	run.pendingXacts, run.pendingCmds, run.pendingBytes, run.storedBytes = 0, 0, 0, 0
	return run.stream.sendStatus(run.confirmed)
}
