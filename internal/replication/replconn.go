package replication

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

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
	snap := "NOEXPORT_SNAPSHOT"
	if export {
		snap = "EXPORT_SNAPSHOT"
	}
	sql := fmt.Sprintf("CREATE_REPLICATION_SLOT %s LOGICAL pgoutput %s", quoteIdent(slot), snap)
	res, err := rc.Exec(ctx, sql).ReadAll()
	if err != nil {
		return slotInfo{}, fmt.Errorf("create replication slot %q: %w", slot, err)
	}
	if len(res) != 1 || len(res[0].Rows) != 1 || len(res[0].Rows[0]) < 3 {
		return slotInfo{}, fmt.Errorf("create replication slot %q: unexpected reply", slot)
	}
	row := res[0].Rows[0]
	lsn, err := ParseLSN(string(row[1]))
	if err != nil {
		return slotInfo{}, fmt.Errorf("create replication slot %q: consistent point: %w", slot, err)
	}
	return slotInfo{ConsistentPoint: lsn, Snapshot: string(row[2])}, nil
}

// replStream is a running START_REPLICATION stream. Its receive goroutine
// delivers every CopyData payload (copied) on Messages; it ends, closing
// Messages, when the connection fails or Close is called. Err then says why.
type replStream struct {
	conn     net.Conn
	messages chan []byte
	done     chan struct{}
	wmu      sync.Mutex
	errMu    sync.Mutex
	err      error
	closed   chan struct{}
	once     sync.Once
}

// startReplication takes over the replication connection rc and starts
// streaming the slot from start (0: from the slot's confirmed position),
// with column values in binary form when binaryValues is set.
func startReplication(ctx context.Context, rc *pgconn.PgConn, slot, publication string, start LSN, binaryValues bool) (*replStream, error) {
	if err := rc.SyncConn(ctx); err != nil {
		rc.Close(ctx)
		return nil, fmt.Errorf("start replication: %w", err)
	}
	hc, err := rc.Hijack()
	if err != nil {
		rc.Close(ctx)
		return nil, fmt.Errorf("start replication: %w", err)
	}
	opts := ""
	if binaryValues {
		opts = `, "binary" 'true'`
	}
	sql := fmt.Sprintf(`START_REPLICATION SLOT %s LOGICAL %s ("proto_version" '1', "publication_names" %s%s)`,
		quoteIdent(slot), start, quoteOption(quoteIdent(publication)), opts)
	msg, err := (&pgproto3.Query{String: sql}).Encode(nil)
	if err != nil {
		hc.Conn.Close()
		return nil, err
	}
	stop := context.AfterFunc(ctx, func() { hc.Conn.SetDeadline(time.Now()) })
	defer stop()
	if _, err := hc.Conn.Write(msg); err != nil {
		hc.Conn.Close()
		return nil, fmt.Errorf("start replication on slot %q: %w", slot, err)
	}
	// Wait for CopyBothResponse, or the error.
	for {
		m, err := hc.Frontend.Receive()
		if err != nil {
			hc.Conn.Close()
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, fmt.Errorf("start replication on slot %q: %w", slot, err)
		}
		switch m := m.(type) {
		case *pgproto3.CopyBothResponse:
			if !stop() {
				hc.Conn.Close()
				return nil, ctx.Err()
			}
			hc.Conn.SetDeadline(time.Time{})
			s := &replStream{conn: hc.Conn, messages: make(chan []byte, 256), done: make(chan struct{}), closed: make(chan struct{})}
			go s.receive(hc.Frontend) // owned by s; ends when the connection closes
			return s, nil
		case *pgproto3.ErrorResponse:
			hc.Conn.Close()
			return nil, fmt.Errorf("start replication on slot %q: %w", slot, pgconn.ErrorResponseToPgError(m))
		case *pgproto3.NoticeResponse, *pgproto3.ParameterStatus:
		default:
			hc.Conn.Close()
			return nil, fmt.Errorf("start replication on slot %q: unexpected %T", slot, m)
		}
	}
}

func (s *replStream) receive(fe *pgproto3.Frontend) {
	defer close(s.done)
	defer close(s.messages)
	for {
		m, err := fe.Receive()
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

// sendStatus reports the flushed position to the server.
func (s *replStream) sendStatus(written, flushed LSN, reply bool) error {
	msg, err := (&pgproto3.CopyData{Data: standbyStatus(written, flushed, time.Now(), reply)}).Encode(nil)
	if err != nil {
		return err
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	s.conn.SetWriteDeadline(time.Now().Add(30 * time.Second))
	if _, err := s.conn.Write(msg); err != nil {
		return fmt.Errorf("send a standby status update: %w", err)
	}
	return nil
}

// Close ends the stream and waits for the receive goroutine.
func (s *replStream) Close() {
	s.once.Do(func() {
		s.errMu.Lock()
		close(s.closed)
		s.errMu.Unlock()
		s.conn.Close()
	})
	<-s.done
}
