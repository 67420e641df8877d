package mariadb

import (
	"context"
	"fmt"
	"strconv"

	"github.com/dbrig/dbrig/internal/engine"
)

var _ engine.ActivityReader = (*Engine)(nil)

// mariaThreads counts client threads by command and state, leaving out this
// one and the server's own.
const mariaThreads = `SELECT COMMAND, coalesce(STATE, ''), count(*)
FROM information_schema.PROCESSLIST
WHERE ID <> CONNECTION_ID() AND USER NOT IN ('system user', 'event_scheduler') AND COMMAND NOT IN ('Daemon', 'Binlog Dump')
GROUP BY 1, 2`

// mariaLockWaits counts transactions waiting for an InnoDB row lock.
const mariaLockWaits = `SELECT count(*) FROM information_schema.INNODB_TRX WHERE trx_state = 'LOCK WAIT'`

// ReadActivity reads the process list (a running thread waits on its
// state) and InnoDB's lock waits (the sessions Waiting, as "row lock").
func (e *Engine) ReadActivity(ctx context.Context, s engine.Session) (engine.Activity, error) {
	var a engine.Activity
	err := engine.Each(ctx, s, mariaThreads, nil, func(row [][]byte) error {
		command, state := string(row[0]), string(row[1])
		n, err := strconv.Atoi(string(row[2]))
		if err != nil {
			return err
		}
		a.Sessions += n
		if command == "Query" || command == "Execute" {
			a.Active += n
			if state != "" {
				a.AddWait(state, n)
			}
		}
		return nil
	})
	if err != nil {
		return engine.Activity{}, fmt.Errorf("PROCESSLIST: %w", err)
	}
	locked, err := engine.Int(ctx, s, mariaLockWaits)
	if err != nil {
		return engine.Activity{}, fmt.Errorf("INNODB_TRX: %w", err)
	}
	a.Waiting = int(locked)
	if locked > 0 {
		a.AddWait("row lock", int(locked))
	}
	return a, nil
}

// MonitorVia: the monitoring login goes through the extra port.
func (e *Engine) MonitorVia(c engine.Conn) string {
	return fmt.Sprintf("the extra port %d: its own connection slots beside max_connections", c.Port)
}
