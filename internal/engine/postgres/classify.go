package postgres

import (
	"errors"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/dbrig/dbrig/internal/engine"
)

// classify gives a PostgreSQL error its class, by its SQLSTATE when the
// server sent it, and the condition a workload acts on.
func classify(err error) (engine.ErrorClass, error) {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		if pgErr.Code == "53300" { // too_many_connections
			return engine.ConnectionLost, engine.ErrTooManyConnections
		}
		return classifySQLState(pgErr.Code), nil
	}
	var connectErr *pgconn.ConnectError
	switch {
	case errors.As(err, &connectErr), errors.Is(err, pgconn.ErrConnClosed):
		return engine.ConnectionLost, nil
	case pgconn.Timeout(err):
		return engine.Timeout, nil
	}
	return engine.GenericClass(err), nil
}

// ClassifyError is the class of an error of pgx or pgconn, for code that
// talks to PostgreSQL in pgx itself (the replication system).
func ClassifyError(err error) engine.ErrorClass {
	c, _ := classify(err)
	return c
}

// classifySQLState maps a PostgreSQL SQLSTATE.
func classifySQLState(code string) engine.ErrorClass {
	switch code {
	case "40001": // serialization_failure
		return engine.Serialization
	case "40P01": // deadlock_detected
		return engine.Deadlock
	case "57014", // query_canceled: statement_timeout
		"55P03", // lock_not_available: lock_timeout, NOWAIT
		"25P03": // idle_in_transaction_session_timeout
		return engine.Timeout
	case "57P01", "57P02", "57P03": // admin_shutdown, crash_shutdown, cannot_connect_now
		return engine.ConnectionLost
	}
	if strings.HasPrefix(code, "08") { // connection exception
		return engine.ConnectionLost
	}
	return engine.OtherError
}
