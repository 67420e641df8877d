package load

import (
	"encoding/json"
	"errors"
	"strconv"
	"strings"

	"github.com/dbrig/dbrig/internal/engine"
	"github.com/dbrig/dbrig/internal/engine/mariadb"
	"github.com/dbrig/dbrig/internal/engine/postgres"
)

// ErrorClass is what kind of failure an operation had: the engine's
// session says, in [engine.ErrorClass].
type ErrorClass = engine.ErrorClass

// The error classes, in the order results list them.
const (
	Serialization   = engine.Serialization
	Deadlock        = engine.Deadlock
	Timeout         = engine.Timeout
	ConnectionLost  = engine.ConnectionLost
	OtherError      = engine.OtherError
	numErrorClasses = engine.NumErrorClasses
)

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
		m[ErrorClass(i).String()] = c
	}
	return json.Marshal(m)
}

// UnmarshalJSON reads the object MarshalJSON writes.
func (e *ErrorCounts) UnmarshalJSON(b []byte) error {
	var m map[string]int64
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	for i := range e {
		e[i] = m[ErrorClass(i).String()]
	}
	return nil
}

// String lists the non-zero counts ("deadlock 3, timeout 1"), or "none".
func (e ErrorCounts) String() string {
	var parts []string
	for i, c := range e {
		if c != 0 {
			parts = append(parts, ErrorClass(i).String()+" "+strconv.FormatInt(c, 10))
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// ClassifyError is the default classifier: the class an engine's session
// gave the error (every error of an [engine.Session] has one), else the
// class the engine whose driver made it gives it, else what the standard
// library's context, network and system errors say, also when wrapped. A
// workload with errors of its own implements [ErrorClassifier] and may
// fall back to this function.
func ClassifyError(err error) ErrorClass {
	var e *engine.Error
	if errors.As(err, &e) {
		return e.Class
	}
	// The workloads that still speak their engine's driver themselves
	// (oltp, script, tenants, tpch, rbar) return the driver's errors:
	// their engine reads them, until they run on engine sessions too.
	// What a driver says of its own errors comes before what the error
	// it wraps (a deadline, a reset) says, as a session's classifier has it.
	generic := engine.GenericClass(err)
	for _, byDriver := range []func(error) ErrorClass{postgres.ClassifyError, mariadb.ClassifyError} {
		if c := byDriver(err); c != generic {
			return c
		}
	}
	return generic
}
