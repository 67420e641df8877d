package postgres

import (
	"context"
	"errors"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/dbrig/dbrig/internal/engine"
)

// pgError is the error value pgx returns for a server error.
func pgError(code string) error {
	return &pgconn.PgError{Severity: "ERROR", Code: code, Message: "server says " + code}
}

// TestClassify holds PostgreSQL's errors to the classes the load layer
// counts, with a real connection failure from pgconn itself (dialling a
// port nothing listens on).
func TestClassify(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().(*net.TCPAddr)
	ln.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	_, connectErr := pgconn.Connect(ctx, fmt.Sprintf("host=127.0.0.1 port=%d user=x dbname=x sslmode=disable connect_timeout=5", closed.Port))
	if connectErr == nil {
		t.Fatal("connecting to a closed port succeeded")
	}
	for _, tt := range []struct {
		name string
		err  error
		want engine.ErrorClass
		cond error
	}{
		{"serialization_failure", pgError("40001"), engine.Serialization, nil},
		{"deadlock_detected", pgError("40P01"), engine.Deadlock, nil},
		{"statement_timeout", pgError("57014"), engine.Timeout, nil},
		{"lock_timeout", pgError("55P03"), engine.Timeout, nil},
		{"admin_shutdown", pgError("57P01"), engine.ConnectionLost, nil},
		{"too_many_connections", pgError("53300"), engine.ConnectionLost, engine.ErrTooManyConnections},
		{"connection_failure", pgError("08006"), engine.ConnectionLost, nil},
		{"unique_violation", pgError("23505"), engine.OtherError, nil},
		{"wrapped by the workload", fmt.Errorf("new-order: commit: %w", pgError("40001")), engine.Serialization, nil},
		{"connect refused", connectErr, engine.ConnectionLost, nil},
		{"conn closed", fmt.Errorf("exec: %w", pgconn.ErrConnClosed), engine.ConnectionLost, nil},
		{"context deadline", context.DeadlineExceeded, engine.Timeout, nil},
		{"plain error", errors.New("no rows in result set"), engine.OtherError, nil},
	} {
		err := engine.Classified(tt.err, classify)
		if got := engine.ClassifyError(fmt.Errorf("a workload's words: %w", err)); got != tt.want {
			t.Errorf("%s: class %v, want %v", tt.name, got, tt.want)
		}
		if tt.cond != nil && !errors.Is(err, tt.cond) {
			t.Errorf("%s: not %v", tt.name, tt.cond)
		}
		if err.Error() != tt.err.Error() {
			t.Errorf("%s: the text changed to %q", tt.name, err)
		}
	}
}
