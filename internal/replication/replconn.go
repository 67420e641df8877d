package replication

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/dbrig/dbrig/internal/engine/postgres"
)

// sessionParams make every value's text form unambiguous and identical on
// both sides: the log reader's walsender renders values with them, the
// agent's subscriber session parses them, verify compares with them.
var sessionParams = map[string]string{
	"DateStyle":                   "ISO, YMD",
	"IntervalStyle":               "postgres",
	"extra_float_digits":          "3",
	"bytea_output":                "hex",
	"TimeZone":                    "UTC",
	"standard_conforming_strings": "on",
	"client_encoding":             "UTF8",
}

// connConfig returns the pgconn configuration of a login with dbrig's
// session parameters and an application name.
func connConfig(ci postgres.ConnInfo, app string) (*pgconn.Config, error) {
	cfg, err := ci.PgConnConfig()
	if err != nil {
		return nil, err
	}
	for k, v := range sessionParams {
		cfg.RuntimeParams[k] = v
	}
	cfg.RuntimeParams["application_name"] = app
	if cfg.ConnectTimeout == 0 {
		cfg.ConnectTimeout = 30 * time.Second
	}
	return cfg, nil
}

// connect opens a pgconn connection with dbrig's session parameters.
func connect(ctx context.Context, ci postgres.ConnInfo, app string) (*pgconn.PgConn, error) {
	cfg, err := connConfig(ci, app)
	if err != nil {
		return nil, err
	}
	c, err := pgconn.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", ci, err)
	}
	return c, nil
}

// connectStreaming opens a connection that reads large result sets: its
// reads take whatever the socket holds (up to 256 KiB) rather than 8 KiB.
func connectStreaming(ctx context.Context, ci postgres.ConnInfo, app string) (*pgconn.PgConn, error) {
	cfg, err := connConfig(ci, app)
	if err != nil {
		return nil, err
	}
	cfg.BuildFrontend = func(r io.Reader, w io.Writer) *pgproto3.Frontend {
		return pgproto3.NewFrontend(bufio.NewReaderSize(r, 256<<10), w)
	}
	c, err := pgconn.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", ci, err)
	}
	return c, nil
}

// connectReplication opens a logical replication connection
// (replication=database) to the publisher.
func connectReplication(ctx context.Context, ci postgres.ConnInfo, app string) (*pgconn.PgConn, error) {
	cfg, err := connConfig(ci, app)
	if err != nil {
		return nil, err
	}
	cfg.RuntimeParams["replication"] = "database"
	c, err := pgconn.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("open a replication connection to %s: %w", ci, err)
	}
	return c, nil
}

// slotInfo is what CREATE_REPLICATION_SLOT returns.
type slotInfo struct {
	ConsistentPoint LSN
	Snapshot        string // exported snapshot name, "" unless asked for
}

// createSlot creates the logical replication slot on a replication
// connection. With export, the slot's consistent point is exported as a
// snapshot that stays usable while the connection stays open and idle.
func createSlot(ctx context.Context, rc *pgconn.PgConn, slot string, export bool) (slotInfo, error) {
	opts := pglogrepl.CreateReplicationSlotOptions{Mode: pglogrepl.LogicalReplication, SnapshotAction: "NOEXPORT_SNAPSHOT"}
	if export {
		opts.SnapshotAction = "EXPORT_SNAPSHOT"
	}
	res, err := pglogrepl.CreateReplicationSlot(ctx, rc, quoteIdent(slot), "pgoutput", opts)
	if err != nil {
		return slotInfo{}, fmt.Errorf("create replication slot %q: %w", slot, err)
	}
	lsn, err := ParseLSN(res.ConsistentPoint)
	if err != nil {
		return slotInfo{}, fmt.Errorf("create replication slot %q: consistent point: %w", slot, err)
	}
	return slotInfo{ConsistentPoint: lsn, Snapshot: res.SnapshotName}, nil
}

// replStream is a running START_REPLICATION stream. Its receive goroutine
// reads ahead of the log reader, which meanwhile stores what it has: it
// delivers every CopyData payload (copied) on messages, and ends, closing
// messages, when the connection fails or Close is called. Err then says why.
type replStream struct {
	conn     *pgconn.PgConn
	messages chan []byte
	done     chan struct{}
	errMu    sync.Mutex
	err      error
	closed   chan struct{}
	once     sync.Once
	// sent is the position the last status update reported; only the
	// log reader's loop sends, so it needs no lock.
	sent LSN
}

// startReplication starts streaming the slot from start (0: from the
// slot's confirmed position) on the replication connection rc, which the
// stream then owns, with column values in binary form when binaryValues is
// set.
func startReplication(ctx context.Context, rc *pgconn.PgConn, slot, publication string, start LSN, binaryValues bool) (*replStream, error) {
	args := []string{`"proto_version" '1'`, `"publication_names" ` + quoteOption(quoteIdent(publication))}
	if binaryValues {
		args = append(args, `"binary" 'true'`)
	}
	err := pglogrepl.StartReplication(ctx, rc, quoteIdent(slot), pglogrepl.LSN(start),
		pglogrepl.StartReplicationOptions{Mode: pglogrepl.LogicalReplication, PluginArgs: args})
	if err != nil {
		rc.Close(context.WithoutCancel(ctx))
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("start replication on slot %q: %w", slot, err)
	}
	s := &replStream{conn: rc, messages: make(chan []byte, 256), done: make(chan struct{}), closed: make(chan struct{})}
	go s.receive() // owned by s; ends when the connection closes
	return s, nil
}

// receive reads without a context, which would cost a watch per message:
// Close ends the read with a deadline.
func (s *replStream) receive() {
	defer close(s.done)
	defer close(s.messages)
	for {
		m, err := s.conn.ReceiveMessage(context.Background())
		if err != nil {
			s.setErr(fmt.Errorf("receive from the replication stream: %w", err))
			return
		}
		switch m := m.(type) {
		case *pgproto3.CopyData:
			b := make([]byte, len(m.Data))
			copy(b, m.Data)
			select {
			case s.messages <- b:
			case <-s.closed:
				return
			}
		case *pgproto3.ErrorResponse:
			s.setErr(fmt.Errorf("replication stream: %w", pgconn.ErrorResponseToPgError(m)))
			return
		case *pgproto3.CopyDone, *pgproto3.CommandComplete, *pgproto3.ReadyForQuery:
			s.setErr(errors.New("replication stream: the server ended the stream"))
			return
		}
	}
}

func (s *replStream) setErr(err error) {
	s.errMu.Lock()
	defer s.errMu.Unlock()
	select {
	case <-s.closed:
		return // closed on purpose: the read error is ours
	default:
	}
	if s.err == nil {
		s.err = err
	}
}

// Err says why the stream ended (nil while it runs or after Close).
func (s *replStream) Err() error {
	s.errMu.Lock()
	defer s.errMu.Unlock()
	return s.err
}

// sendStatus reports the position received, flushed and applied (the
// distribution database holds everything before it). Only the log reader's
// loop sends; the receive goroutine only reads, so the two share the
// socket without a lock.
func (s *replStream) sendStatus(confirmed LSN) error {
	// A peer that stopped reading must not hold the loop forever.
	s.conn.Conn().SetWriteDeadline(time.Now().Add(30 * time.Second))
	err := pglogrepl.SendStandbyStatusUpdate(context.Background(), s.conn, pglogrepl.StandbyStatusUpdate{WALWritePosition: pglogrepl.LSN(confirmed)})
	if err != nil {
		return fmt.Errorf("send a standby status update: %w", err)
	}
	s.sent = confirmed
	return nil
}

// Close ends the stream: a read deadline in the past ends the receive
// goroutine's read (a read error other than a timeout would make pgconn
// send a cancel request over a new connection), then the connection is
// closed.
func (s *replStream) Close() {
	s.once.Do(func() {
		s.errMu.Lock()
		close(s.closed)
		s.errMu.Unlock()
		s.conn.Conn().SetReadDeadline(time.Now())
	})
	<-s.done
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s.conn.Close(ctx)
}
