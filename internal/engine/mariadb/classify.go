package mariadb

import (
	"errors"

	"github.com/go-sql-driver/mysql"

	"github.com/dbrig/dbrig/internal/engine"
)

// classify gives a MariaDB (or MySQL) error its class, by the server's or
// the client's error number, and the condition a workload acts on.
func classify(err error) (engine.ErrorClass, error) {
	var myErr *mysql.MySQLError
	if errors.As(err, &myErr) {
		switch myErr.Number {
		case 1040: // ER_CON_COUNT_ERROR: too many connections
			return engine.ConnectionLost, engine.ErrTooManyConnections
		case 1295: // ER_UNSUPPORTED_PS
			return engine.OtherError, engine.ErrNotPreparable
		}
		return classifyNumber(myErr), nil
	}
	if errors.Is(err, mysql.ErrInvalidConn) {
		return engine.ConnectionLost, nil
	}
	return engine.GenericClass(err), nil
}

// classifyNumber maps a MySQL or MariaDB server (or client) error number.
func classifyNumber(e *mysql.MySQLError) engine.ErrorClass {
	switch e.Number {
	case 1213: // ER_LOCK_DEADLOCK (SQLSTATE 40001 in MySQL: it is a deadlock victim)
		return engine.Deadlock
	case 1020: // ER_CHECKREAD: MariaDB snapshot isolation saw a concurrent change
		return engine.Serialization
	case 1205, // ER_LOCK_WAIT_TIMEOUT
		1317, // ER_QUERY_INTERRUPTED
		1969, // ER_STATEMENT_TIMEOUT (MariaDB max_statement_time)
		3024: // ER_QUERY_TIMEOUT (MySQL max_execution_time)
		return engine.Timeout
	case 1053, // ER_SERVER_SHUTDOWN
		1927,                         // ER_CONNECTION_KILLED (MariaDB)
		2002, 2003, 2006, 2013, 2055: // client: cannot connect, gone away, lost connection
		return engine.ConnectionLost
	}
	if string(e.SQLState[:]) == "40001" {
		return engine.Serialization
	}
	if e.SQLState[0] == '0' && e.SQLState[1] == '8' {
		return engine.ConnectionLost
	}
	return engine.OtherError
}

// ClassifyError is the class of an error of go-sql-driver/mysql, for code
// that talks to MariaDB in the driver itself.
func ClassifyError(err error) engine.ErrorClass {
	c, _ := classify(err)
	return c
}
