package postgres

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/dbrig/dbrig/internal/engine"
)

var _ engine.ActivityReader = (*Engine)(nil)

// pgActivity counts client sessions by state and wait, leaving out this
// one.
const pgActivity = `SELECT coalesce(state, ''), coalesce(wait_event_type || ':' || wait_event, ''), count(*)
FROM pg_stat_activity
WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()
GROUP BY 1, 2`

// ReadActivity reads pg_stat_activity: a session waits when
// wait_event_type:wait_event says on what.
func (e *Engine) ReadActivity(ctx context.Context, s engine.Session) (engine.Activity, error) {
	var a engine.Activity
	err := engine.Each(ctx, s, pgActivity, nil, func(row [][]byte) error {
		state, wait := string(row[0]), string(row[1])
		n, err := strconv.Atoi(string(row[2]))
		if err != nil {
			return err
		}
		a.Sessions += n
		switch {
		case state == "active":
			a.Active += n
			if wait != "" {
				a.Waiting += n
				a.AddWait(wait, n)
			}
		case strings.HasPrefix(state, "idle in transaction"):
			a.IdleInTx += n
		}
		return nil
	})
	if err != nil {
		return engine.Activity{}, fmt.Errorf("pg_stat_activity: %w", err)
	}
	return a, nil
}

// MonitorVia: the monitoring login is the superuser's through the socket.
func (e *Engine) MonitorVia(engine.Conn) string {
	return "the superuser through the unix socket: PostgreSQL's reserved superuser slots"
}
