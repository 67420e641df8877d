package replication

import (
	"context"
	"os"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/dbrig/dbrig/internal/engine/postgres"
)

// The two roles of a replication run as processes of their own, possibly on
// different hosts. Each records in the distribution database where it runs
// (host, pid, mode), since when, and, when it stops, why: status reads
// that, and tells whether the role still runs from the lock each one holds
// while it runs.
const (
	roleLogReader = "log reader"
	roleAgent     = "agent"
)

// place is where a role runs.
type place struct {
	Host    string
	PID     int
	Started time.Time
	Mode    string // the agent's mode
}

func thisPlace(mode string) place {
	host, err := os.Hostname()
	if err != nil {
		host = "unknown host"
	}
	return place{Host: host, PID: os.Getpid(), Started: time.Now(), Mode: mode}
}

// agentAppName is the application name of a distribution agent's sessions:
// teardown and status find a running agent by it.
func agentAppName(publication string) string { return "dbrig agent " + publication }

// logReaderAppName is the log reader's.
func logReaderAppName(publication string) string { return "dbrig log reader " + publication }

// markRunning records that the role runs at p, on the role's own connection
// to the distribution database.
func markRunning(ctx context.Context, c *pgconn.PgConn, role, publication string, p place) error {
	var sql string
	args := [][]byte{[]byte(p.Host), []byte(strconv.Itoa(p.PID)), []byte(p.Started.UTC().Format(time.RFC3339Nano)), []byte(publication)}
	if role == roleLogReader {
		sql = "UPDATE " + Schema + ".log_reader SET host = $1, pid = $2, started_at = $3, state = 'running', error = NULL, stopped_at = NULL WHERE publication = $4"
	} else {
		sql = "UPDATE " + Schema + ".subscriptions SET agent_host = $1, agent_pid = $2, agent_started_at = $3, agent_mode = $5, agent_state = 'running', agent_error = NULL, agent_stopped_at = NULL WHERE name = $4"
		args = append(args, []byte(p.Mode))
	}
	_, err := c.ExecParams(ctx, sql, args, nil, nil, nil).Close()
	return err
}

// markStopped records that the role stopped, and why (nil: asked to). It
// tries for a few seconds on a connection of its own and gives up quietly:
// a role that cannot reach the distribution database cannot say why it
// stopped, and status then says it does not know.
func markStopped(ctx context.Context, distribution postgres.ConnInfo, role, publication string, cause error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	c, err := connect(ctx, distribution, "dbrig "+role+" "+publication+" stop")
	if err != nil {
		return
	}
	defer c.Close(ctx)
	var why []byte // NULL
	if cause != nil {
		why = []byte(cause.Error())
	}
	sql := "UPDATE " + Schema + ".log_reader SET state = 'stopped', error = $1, stopped_at = now() WHERE publication = $2"
	if role == roleAgent {
		sql = "UPDATE " + Schema + ".subscriptions SET agent_state = 'stopped', agent_error = $1, agent_stopped_at = now() WHERE name = $2"
	}
	c.ExecParams(ctx, sql, [][]byte{why, []byte(publication)}, nil, nil, nil).Close()
}
