package load

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"testing"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/dbrig/dbrig/internal/engine"
)

// classedError is an error as an engine's session returns it: of a class.
func classedError(class ErrorClass) error {
	return &engine.Error{Class: class, Err: errors.New("the server says " + class.String())}
}

// TestClassifyError holds the default classifier to the class an engine's
// session gave an error, wrapped or not, and to the classes of the
// standard library's errors.
func TestClassifyError(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		err  error
		want ErrorClass
	}{
		{"an engine's serialization failure", classedError(Serialization), Serialization},
		{"wrapped by the workload", fmt.Errorf("new-order: commit: %w", classedError(Deadlock)), Deadlock},
		{"an engine's class wins over a deadline around it", fmt.Errorf("%w (%w)", context.DeadlineExceeded, classedError(ConnectionLost)), ConnectionLost},
		{"database/sql bad conn", driver.ErrBadConn, ConnectionLost},
		{"context deadline", context.DeadlineExceeded, Timeout},
		{"i/o deadline", fmt.Errorf("read: %w", os.ErrDeadlineExceeded), Timeout},
		{"connection reset", &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}, ConnectionLost},
		{"broken pipe", fmt.Errorf("write: %w", syscall.EPIPE), ConnectionLost},
		{"unexpected EOF", io.ErrUnexpectedEOF, ConnectionLost},
		{"plain error", errors.New("no rows in result set"), OtherError},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ClassifyError(tt.err); got != tt.want {
				t.Errorf("ClassifyError(%v) = %v, want %v", tt.err, got, tt.want)
			}
		})
	}
}

func TestErrorCountsJSONRoundTrip(t *testing.T) {
	in := ErrorCounts{Serialization: 3, Timeout: 1}
	b, err := in.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	var out ErrorCounts
	if err := out.UnmarshalJSON(b); err != nil || out != in {
		t.Errorf("round trip %s gave %v (%v), want %v", b, out, err, in)
	}
	if s := in.String(); s != "serialization 3, timeout 1" {
		t.Errorf("String() = %q", s)
	}
}

// TestClassifyDriverErrors holds the default classifier to the classes of
// the errors of the drivers some workloads still speak themselves, before
// what the errors they wrap say.
func TestClassifyDriverErrors(t *testing.T) {
	t.Parallel()
	myDeadlock := &mysql.MySQLError{Number: 1213, Message: "deadlock"}
	copy(myDeadlock.SQLState[:], "40001")
	for _, tt := range []struct {
		name string
		err  error
		want ErrorClass
	}{
		{"pg serialization_failure", &pgconn.PgError{Code: "40001"}, Serialization},
		{"pg too_many_connections", fmt.Errorf("connect: %w", &pgconn.PgError{Code: "53300"}), ConnectionLost},
		{"pg conn closed", pgconn.ErrConnClosed, ConnectionLost},
		{"mysql deadlock", myDeadlock, Deadlock},
		{"mysql deadlock under a deadline", fmt.Errorf("%w (%w)", context.DeadlineExceeded, myDeadlock), Deadlock},
		{"mysql invalid connection", mysql.ErrInvalidConn, ConnectionLost},
		{"pg unique_violation", &pgconn.PgError{Code: "23505"}, OtherError},
	} {
		if got := ClassifyError(tt.err); got != tt.want {
			t.Errorf("%s: ClassifyError(%v) = %v, want %v", tt.name, tt.err, got, tt.want)
		}
	}
}
