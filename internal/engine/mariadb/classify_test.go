package mariadb

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/dbrig/dbrig/internal/engine"
)

func myError(number uint16, state string) error {
	e := &mysql.MySQLError{Number: number, Message: "server says " + fmt.Sprint(number)}
	copy(e.SQLState[:], state)
	return e
}

// TestClassify holds MariaDB's errors to the classes the load layer
// counts, with a real connection failure from the driver itself (dialling
// a port nothing listens on).
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
	connector, err := mysql.NewConnector(&mysql.Config{Net: "tcp", Addr: closed.String(), User: "x", AllowNativePasswords: true})
	if err != nil {
		t.Fatal(err)
	}
	_, connectErr := connector.Connect(ctx)
	if connectErr == nil {
		t.Fatal("connecting to a closed port succeeded")
	}
	for _, tt := range []struct {
		name string
		err  error
		want engine.ErrorClass
		cond error
	}{
		{"deadlock", myError(1213, "40001"), engine.Deadlock, nil},
		{"snapshot isolation", myError(1020, "HY000"), engine.Serialization, nil},
		{"lock wait timeout", myError(1205, "HY000"), engine.Timeout, nil},
		{"max_statement_time", myError(1969, "70100"), engine.Timeout, nil},
		{"server gone away", myError(2006, "HY000"), engine.ConnectionLost, nil},
		{"lost connection", myError(2013, "HY000"), engine.ConnectionLost, nil},
		{"too many connections", myError(1040, "08004"), engine.ConnectionLost, engine.ErrTooManyConnections},
		{"not preparable", myError(1295, "HY000"), engine.OtherError, engine.ErrNotPreparable},
		{"duplicate key", myError(1062, "23000"), engine.OtherError, nil},
		{"invalid connection", mysql.ErrInvalidConn, engine.ConnectionLost, nil},
		{"database/sql bad conn", driver.ErrBadConn, engine.ConnectionLost, nil},
		{"connect refused", connectErr, engine.ConnectionLost, nil},
		{"plain error", errors.New("no rows in result set"), engine.OtherError, nil},
	} {
		err := engine.Classified(tt.err, classify)
		if got := engine.ClassifyError(fmt.Errorf("a workload's words: %w", err)); got != tt.want {
			t.Errorf("%s: class %v, want %v", tt.name, got, tt.want)
		}
		if tt.cond != nil && !errors.Is(err, tt.cond) {
			t.Errorf("%s: not %v", tt.name, tt.cond)
		}
	}
}
