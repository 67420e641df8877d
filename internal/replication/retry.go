package replication

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// errBusy says another process holds the role (log reader or agent) for the
// same publication; it usually clears when a killed predecessor's session
// ends.
var errBusy = errors.New("busy")

type busyError struct{ msg string }

func (e *busyError) Error() string { return e.msg }
func (e *busyError) Unwrap() error { return errBusy }

// retryable reports whether err is the kind a long-running agent survives
// by reconnecting: lost or refused connections, server restarts, a slot
// still held by a dead predecessor. Errors the subscriber raises about the
// data itself (constraints, a full disk) are not: the agent stops on them.
func retryable(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var ae *ApplyError
	if errors.As(err, &ae) {
		return retryablePg(ae.Err)
	}
	if errors.Is(err, errBusy) {
		return true
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return retryableCode(pgErr.Code)
	}
	var ce *pgconn.ConnectError
	if errors.As(err, &ce) {
		return true
	}
	var ne net.Error
	if errors.As(err, &ne) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, net.ErrClosed) {
		return true
	}
	msg := err.Error()
	for _, s := range []string{"conn closed", "connection reset", "broken pipe", "unexpected EOF", "server ended the stream", "connection refused"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

func retryablePg(err error) bool {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return retryableCode(pgErr.Code)
	}
	return retryable(err)
}

func retryableCode(code string) bool {
	switch {
	case strings.HasPrefix(code, "08"): // connection exception
		return true
	case code == "57P01", code == "57P02", code == "57P03": // shutdown, crash, starting up
		return true
	case code == "55006": // object in use: the slot of a walsender still exiting
		return true
	case code == "53300": // too many connections
		return true
	case code == "40001", code == "40P01": // serialization failure, deadlock
		return true
	case code == "DR001", code == "DR002": // our advance and guard: a rival agent, or an earlier pipelined batch failed
		return true
	}
	return false
}

// retryLoop runs once until it succeeds, ctx ends, or it fails with an error
// that is not retryable. Waits grow from 100 ms to 5 s and start again
// after a run that lasted a while.
func retryLoop(ctx context.Context, log *slog.Logger, what string, noRetry bool, once func(context.Context) error, restarted func()) error {
	wait := 100 * time.Millisecond
	for {
		start := time.Now()
		err := once(ctx)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err == nil || noRetry || !retryable(err) {
			return err
		}
		if time.Since(start) > 10*time.Second {
			wait = 100 * time.Millisecond
		}
		log.Warn(what+" will reconnect", "err", err, "in", wait)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
		wait = min(wait*2, 5*time.Second)
		if restarted != nil {
			restarted()
		}
	}
}
