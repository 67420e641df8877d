package monitor

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/dbrig/dbrig/internal/engine"
	"github.com/dbrig/dbrig/internal/engine/postgres"
)

type pgSource struct{ conn *pgx.Conn }

func openPostgres(ctx context.Context, login engine.Conn) (source, error) {
	cfg, err := postgres.ConnInfoOf(login).ConnConfig()
	if err != nil {
		return nil, err
	}
	cfg.RuntimeParams["application_name"] = "dbrig monitor"
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return &pgSource{conn: conn}, nil
}

// pgActivity counts client sessions by state and wait, leaving out this
// one.
const pgActivity = `SELECT coalesce(state, ''), coalesce(wait_event_type || ':' || wait_event, ''), count(*)
FROM pg_stat_activity
WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()
GROUP BY 1, 2`

func (s *pgSource) read(ctx context.Context) (Sample, error) {
	rows, err := s.conn.Query(ctx, pgActivity)
	if err != nil {
		return Sample{}, err
	}
	defer rows.Close()
	var smp Sample
	for rows.Next() {
		var state, wait string
		var n int
		if err := rows.Scan(&state, &wait, &n); err != nil {
			return Sample{}, err
		}
		smp.Sessions += n
		switch {
		case state == "active":
			smp.Active += n
			if wait != "" {
				smp.Waiting += n
				if smp.Waits == nil {
					smp.Waits = map[string]int{}
				}
				smp.Waits[wait] += n
			}
		case strings.HasPrefix(state, "idle in transaction"):
			smp.IdleInTx += n
		}
	}
	if err := rows.Err(); err != nil {
		return Sample{}, fmt.Errorf("pg_stat_activity: %w", err)
	}
	return smp, nil
}

func (s *pgSource) close() {
	ctx, cancel := context.WithTimeout(context.Background(), connectTimeout)
	defer cancel()
	s.conn.Close(ctx)
}
