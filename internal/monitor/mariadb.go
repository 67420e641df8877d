package monitor

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/dbrig/dbrig/internal/engine"
	"github.com/dbrig/dbrig/internal/engine/mariadb"
)

type mariaSource struct {
	db   *sql.DB
	conn *sql.Conn
}

func openMaria(ctx context.Context, login engine.Conn) (source, error) {
	db, err := mariadb.Open(ctx, login)
	if err != nil {
		return nil, err
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		db.Close()
		return nil, err
	}
	return &mariaSource{db: db, conn: conn}, nil
}

// mariaThreads counts client threads by command and state, leaving out this
// one and the server's own.
const mariaThreads = `SELECT COMMAND, coalesce(STATE, ''), count(*)
FROM information_schema.PROCESSLIST
WHERE ID <> CONNECTION_ID() AND USER NOT IN ('system user', 'event_scheduler') AND COMMAND NOT IN ('Daemon', 'Binlog Dump')
GROUP BY 1, 2`

// mariaLockWaits counts transactions waiting for an InnoDB row lock.
const mariaLockWaits = `SELECT count(*) FROM information_schema.INNODB_TRX WHERE trx_state = 'LOCK WAIT'`

func (s *mariaSource) read(ctx context.Context) (Sample, error) {
	rows, err := s.conn.QueryContext(ctx, mariaThreads)
	if err != nil {
		return Sample{}, err
	}
	defer rows.Close()
	var smp Sample
	for rows.Next() {
		var command, state string
		var n int
		if err := rows.Scan(&command, &state, &n); err != nil {
			return Sample{}, err
		}
		smp.Sessions += n
		if command == "Query" || command == "Execute" {
			smp.Active += n
			if state != "" {
				if smp.Waits == nil {
					smp.Waits = map[string]int{}
				}
				smp.Waits[state] += n
			}
		}
	}
	if err := rows.Err(); err != nil {
		return Sample{}, fmt.Errorf("PROCESSLIST: %w", err)
	}
	var locked int
	if err := s.conn.QueryRowContext(ctx, mariaLockWaits).Scan(&locked); err != nil {
		return Sample{}, fmt.Errorf("INNODB_TRX: %w", err)
	}
	smp.Waiting = locked
	if locked > 0 {
		if smp.Waits == nil {
			smp.Waits = map[string]int{}
		}
		smp.Waits["row lock"] += locked
	}
	return smp, nil
}

func (s *mariaSource) close() {
	s.conn.Close()
	s.db.Close()
}
