package engine

import (
	"context"
	"database/sql/driver"
	"errors"
	"io"
	"net"
	"os"
	"syscall"
)

// ErrorClass is what kind of failure an operation had. A performance
// engineer reads them differently: serialization failures and deadlocks are
// the price of contention and are retried by applications, timeouts are the
// server (or a lock) being too slow, a lost connection is an outage or a
// limit. Each engine's sessions say which class their errors are in (see
// [Error]); the load layer counts failures by class.
type ErrorClass uint8

// The error classes, in the order results list them.
const (
	Serialization  ErrorClass = iota // could not serialize (PostgreSQL's SQLSTATE 40001)
	Deadlock                         // deadlock detected and this transaction chosen as victim
	Timeout                          // statement, lock-wait or network timeout
	ConnectionLost                   // connection closed, reset, refused or dropped by the server
	OtherError                       // anything else
	NumErrorClasses
)

var errorClassNames = [NumErrorClasses]string{"serialization", "deadlock", "timeout", "connection", "other"}

// String is the class's name as results and metrics show it.
func (c ErrorClass) String() string {
	if c < NumErrorClasses {
		return errorClassNames[c]
	}
	return "unknown"
}

// Conditions a session's error may carry beside its class, tested with
// errors.Is: what a workload does differently for them is the same on
// every engine, however each engine words them.
var (
	// ErrTooManyConnections: the server refused a connection because
	// every connection slot was taken (PostgreSQL's 53300, MariaDB's
	// 1040). Its class is ConnectionLost.
	ErrTooManyConnections = errors.New("the server has no connection slot left")
	// ErrNotPreparable: the server cannot prepare this statement (MariaDB's
	// 1295, "not supported in the prepared statement protocol yet"); it
	// runs as text instead.
	ErrNotPreparable = errors.New("the server cannot prepare this statement")
)

// Error is an error of an engine's session with the class the engine gave
// it. Its text is the driver's, unchanged.
type Error struct {
	Class ErrorClass
	// Condition is ErrTooManyConnections, ErrNotPreparable or nil.
	Condition error
	Err       error
}

func (e *Error) Error() string { return e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// Is matches the error's condition besides what it wraps.
func (e *Error) Is(target error) bool { return e.Condition != nil && target == e.Condition }

// Classified wraps err with the class (and condition) classify finds for
// it; nil stays nil, and an error already classified is returned as it is.
func Classified(err error, classify func(error) (ErrorClass, error)) error {
	if err == nil {
		return nil
	}
	var e *Error
	if errors.As(err, &e) {
		return err
	}
	class, cond := classify(err)
	return &Error{Class: class, Condition: cond, Err: err}
}

// ClassifyError is the class of any error: the class an engine's session
// gave it (see [Error]), else what the standard library's context, network
// and system errors say, also when wrapped.
func ClassifyError(err error) ErrorClass {
	var e *Error
	if errors.As(err, &e) {
		return e.Class
	}
	return GenericClass(err)
}

// GenericClass classifies the errors every driver shares: a dead
// connection, a deadline, the network's and the system's errors. An
// engine's classifier falls back to it for what is not the server's own.
func GenericClass(err error) ErrorClass {
	switch {
	case errors.Is(err, driver.ErrBadConn):
		return ConnectionLost
	case errors.Is(err, context.DeadlineExceeded),
		errors.Is(err, os.ErrDeadlineExceeded):
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
