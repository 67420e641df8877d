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
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/pgconn"
)

// pgError is the error value pgx returns for a server error.
func pgError(code string) error {
	return &pgconn.PgError{Severity: "ERROR", Code: code, Message: "server says " + code}
}

func myError(number uint16, state string) error {
	e := &mysql.MySQLError{Number: number, Message: "server says " + fmt.Sprint(number)}
	copy(e.SQLState[:], state)
	return e
}

func TestClassifyError(t *testing.T) {
	// Real connection failures from the drivers themselves: dialling a port
	// nothing listens on.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedAddr := ln.Addr().(*net.TCPAddr)
	ln.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	_, pgConnectErr := pgconn.Connect(ctx, fmt.Sprintf("host=127.0.0.1 port=%d user=x dbname=x sslmode=disable connect_timeout=5", closedAddr.Port))
	if pgConnectErr == nil {
		t.Fatal("connecting to a closed port succeeded")
	}
	myConnector, err := mysql.NewConnector(&mysql.Config{Net: "tcp", Addr: closedAddr.String(), User: "x", AllowNativePasswords: true})
	if err != nil {
		t.Fatal(err)
	}
	_, myConnectErr := myConnector.Connect(ctx)
	if myConnectErr == nil {
		t.Fatal("connecting to a closed port succeeded")
	}

	tests := []struct {
		name string
		err  error
		want ErrorClass
	}{
		{"pg serialization_failure", pgError("40001"), Serialization},
		{"pg deadlock_detected", pgError("40P01"), Deadlock},
		{"pg statement_timeout", pgError("57014"), Timeout},
		{"pg lock_timeout", pgError("55P03"), Timeout},
		{"pg admin_shutdown", pgError("57P01"), ConnectionLost},
		{"pg too_many_connections", pgError("53300"), ConnectionLost},
		{"pg connection_failure", pgError("08006"), ConnectionLost},
		{"pg unique_violation", pgError("23505"), OtherError},
		{"pg wrapped by the workload", fmt.Errorf("new-order: commit: %w", pgError("40001")), Serialization},
		{"pg connect refused", pgConnectErr, ConnectionLost},
		{"pg conn closed", fmt.Errorf("exec: %w", pgconn.ErrConnClosed), ConnectionLost},
		{"mysql deadlock", myError(1213, "40001"), Deadlock},
		{"mysql lock wait timeout", myError(1205, "HY000"), Timeout},
		{"mariadb max_statement_time", myError(1969, "70100"), Timeout},
		{"mysql server gone away", myError(2006, "HY000"), ConnectionLost},
		{"mysql lost connection", myError(2013, "HY000"), ConnectionLost},
		{"mysql too many connections", myError(1040, "08004"), ConnectionLost},
		{"mysql duplicate key", myError(1062, "23000"), OtherError},
		{"mysql invalid connection", mysql.ErrInvalidConn, ConnectionLost},
		{"database/sql bad conn", driver.ErrBadConn, ConnectionLost},
		{"mysql connect refused", myConnectErr, ConnectionLost},
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
