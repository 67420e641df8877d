package load

import (
	"context"
	"database/sql/driver"
	"encoding/json"
	"errors"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/pgconn"
)

// ErrorClass is what kind of failure an operation had. A performance engineer
// reads them differently: serialization failures and deadlocks are the price
// of contention and are retried by applications, timeouts are the server (or
// a lock) being too slow, a lost connection is an outage or a limit.
type ErrorClass uint8

// The error classes, in the order results list them.
const (
	Serialization  ErrorClass = iota // could not serialize (SQLSTATE 40001)
	Deadlock                         // deadlock detected and this transaction chosen as victim
	Timeout                          // statement, lock-wait or network timeout
	ConnectionLost                   // connection closed, reset, refused or dropped by the server
	OtherError                       // anything else
	numErrorClasses
)

var errorClassNames = [numErrorClasses]string{"serialization", "deadlock", "timeout", "connection", "other"}

// String is the class's name as results and metrics show it.
func (c ErrorClass) String() string {
	if c < numErrorClasses {
		return errorClassNames[c]
	}
	return "unknown"
}

// ErrorClasses lists every class, in order.
func ErrorClasses() []ErrorClass {
	return []ErrorClass{Serialization, Deadlock, Timeout, ConnectionLost, OtherError}
}

// ErrorCounts counts failed operations by class; index it with an
// [ErrorClass].
type ErrorCounts [numErrorClasses]int64

// Total is the number of failed operations of every class.
func (e ErrorCounts) Total() int64 {
	var n int64
	for _, c := range e {
		n += c
	}
	return n
}

func (e *ErrorCounts) add(o *ErrorCounts) {
	for i := range e {
		e[i] += o[i]
	}
}

// MarshalJSON writes the counts as an object keyed by class name.
func (e ErrorCounts) MarshalJSON() ([]byte, error) {
	m := make(map[string]int64, len(e))
	for i, c := range e {
		m[errorClassNames[i]] = c
	}
	return json.Marshal(m)
}

// UnmarshalJSON reads the object MarshalJSON writes.
func (e *ErrorCounts) UnmarshalJSON(b []byte) error {
	var m map[string]int64
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	for i, name := range errorClassNames {
		e[i] = m[name]
	}
	return nil
}

// String lists the non-zero counts ("deadlock 3, timeout 1"), or "none".
func (e ErrorCounts) String() string {
	var parts []string
	for i, c := range e {
		if c != 0 {
			parts = append(parts, errorClassNames[i]+" "+strconv.FormatInt(c, 10))
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// ClassifyError is the default classifier. It understands PostgreSQL errors
// as pgx returns them, MySQL and MariaDB errors as go-sql-driver/mysql returns
// them, and the standard library's context, network and system errors, also
// when wrapped. A workload with errors of its own implements
// [ErrorClassifier] and may fall back to this function.
func ClassifyError(err error) ErrorClass {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return classifySQLState(pgErr.Code)
	}
	var myErr *mysql.MySQLError
	if errors.As(err, &myErr) {
		return classifyMySQL(myErr)
	}
	var connectErr *pgconn.ConnectError
	switch {
	case errors.As(err, &connectErr),
		errors.Is(err, pgconn.ErrConnClosed),
		errors.Is(err, mysql.ErrInvalidConn),
		errors.Is(err, driver.ErrBadConn):
		return ConnectionLost
	case errors.Is(err, context.DeadlineExceeded),
		errors.Is(err, os.ErrDeadlineExceeded),
		pgconn.Timeout(err):
		return Timeout
	}
	var netErr net.Error
	if errors.As(err, &netErr) && netErr.Timeout() {
		return Timeout
	}
	switch {
	case errors.Is(err, io.EOF),
		errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, net.ErrClosed),
		errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, syscall.ECONNREFUSED),
		errors.Is(err, syscall.ECONNABORTED),
		errors.Is(err, syscall.EPIPE):
		return ConnectionLost
	}
	var opErr *net.OpError
	if errors.As(err, &opErr) {
		return ConnectionLost
	}
	return OtherError
}

// classifySQLState maps a PostgreSQL SQLSTATE.
func classifySQLState(code string) ErrorClass {
	switch code {
	case "40001": // serialization_failure
		return Serialization
	case "40P01": // deadlock_detected
		return Deadlock
	case "57014", // query_canceled: statement_timeout
		"55P03", // lock_not_available: lock_timeout, NOWAIT
		"25P03": // idle_in_transaction_session_timeout
		return Timeout
	case "57P01", "57P02", "57P03", // admin_shutdown, crash_shutdown, cannot_connect_now
		"53300": // too_many_connections
		return ConnectionLost
	}
	if strings.HasPrefix(code, "08") { // connection exception
		return ConnectionLost
	}
	return OtherError
}

// classifyMySQL maps a MySQL or MariaDB server (or client) error number.
func classifyMySQL(e *mysql.MySQLError) ErrorClass {
	switch e.Number {
	case 1213: // ER_LOCK_DEADLOCK (SQLSTATE 40001 in MySQL: it is a deadlock victim)
		return Deadlock
	case 1020: // ER_CHECKREAD: MariaDB snapshot isolation saw a concurrent change
		return Serialization
	case 1205, // ER_LOCK_WAIT_TIMEOUT
		1317, // ER_QUERY_INTERRUPTED
		1969, // ER_STATEMENT_TIMEOUT (MariaDB max_statement_time)
		3024: // ER_QUERY_TIMEOUT (MySQL max_execution_time)
		return Timeout
	case 1040, // ER_CON_COUNT_ERROR: too many connections
		1053,                         // ER_SERVER_SHUTDOWN
		1927,                         // ER_CONNECTION_KILLED (MariaDB)
		2002, 2003, 2006, 2013, 2055: // client: cannot connect, gone away, lost connection
		return ConnectionLost
	}
	if string(e.SQLState[:]) == "40001" {
		return Serialization
	}
	if e.SQLState[0] == '0' && e.SQLState[1] == '8' {
		return ConnectionLost
	}
	return OtherError
}
