package georep

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/dbrig/dbrig/internal/engine/postgres"
	"github.com/dbrig/dbrig/internal/replication"
)

// pgxConnect opens the rig's own connection (set-up, inserts, counting).
func pgxConnect(ctx context.Context, ci postgres.ConnInfo, app string) (*pgx.Conn, error) {
	cfg, err := ci.ConnConfig()
	if err != nil {
		return nil, err
	}
	cfg.RuntimeParams["application_name"] = app
	c, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", ci, err)
	}
	return c, nil
}

func execAll(ctx context.Context, c *pgx.Conn, stmts []string) error {
	for _, s := range stmts {
		if _, err := c.Exec(ctx, s); err != nil {
			return fmt.Errorf("%s: %w", s, err)
		}
	}
	return nil
}

func quoteIdent(s string) string { return pgx.Identifier{s}.Sanitize() }

func quoteLiteral(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

var nameRE = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,47}$`)

func validateName(what, name string) error {
	if !nameRE.MatchString(name) {
		return fmt.Errorf("%s %q: use 1 to 48 lower-case letters, digits and underscores, starting with a letter or underscore", what, name)
	}
	return nil
}

// currentLSN is the publisher's WAL insert position.
func currentLSN(ctx context.Context, c *pgx.Conn) (replication.LSN, error) {
	var s string
	if err := c.QueryRow(ctx, "SELECT pg_current_wal_insert_lsn()::text").Scan(&s); err != nil {
		return 0, fmt.Errorf("read the publisher's WAL position: %w", err)
	}
	return replication.ParseLSN(s)
}

func pollUntil(ctx context.Context, poll time.Duration, cond func() (bool, error)) error {
	for {
		ok, err := cond()
		if err != nil || ok {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(poll):
		}
	}
}
