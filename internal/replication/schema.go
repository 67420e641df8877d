package replication

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
)

// distributionMarker is the comment dbrig puts on a distribution database
// it creates: teardown drops a database only when it carries it, and setup
// adds a publication only to a database that does. The layout number
// changes when the tables below change incompatibly.
const distributionMarker = "dbrig distribution database, layout 2: created by dbrig replicate setup, removed by dbrig replicate teardown"

// subscriberMarker is the comment on the subscriber's bookkeeping schema.
const subscriberMarker = "dbrig replication bookkeeping: created by dbrig replicate setup, removed by dbrig replicate teardown"

// commandsTable and relationsTable are a publication's own tables in the
// distribution database: several publications share one database, each
// with its command stream.
func commandsTable(publication string) string {
	return Schema + "." + quoteIdent("commands_"+publication)
}

func relationsTable(publication string) string {
	return Schema + "." + quoteIdent("relations_"+publication)
}

// distributionDDL creates the distribution database's shared tables: the
// catalog of the publications it serves, their tables, and each role's
// record (the log reader's position and state, the agent's reported
// position and state).
var distributionDDL = []string{
	"CREATE SCHEMA " + Schema,
	`CREATE TABLE ` + Schema + `.publication (
		name text PRIMARY KEY,
		slot text NOT NULL,
		publisher_database text NOT NULL,
		publisher text NOT NULL,
		init text NOT NULL,
		binary_values boolean NOT NULL DEFAULT false,
		compression text NOT NULL DEFAULT 'zstd',
		consistent_lsn pg_lsn NOT NULL,
		created_at timestamptz NOT NULL DEFAULT now())`,
	`CREATE TABLE ` + Schema + `.tables (
		publication text NOT NULL REFERENCES ` + Schema + `.publication ON DELETE CASCADE,
		schema_name text NOT NULL,
		table_name text NOT NULL,
		key_columns text[] NOT NULL,
		PRIMARY KEY (publication, schema_name, table_name))`,
	`CREATE TABLE ` + Schema + `.log_reader (
		publication text PRIMARY KEY REFERENCES ` + Schema + `.publication ON DELETE CASCADE,
		last_cmd_id bigint NOT NULL,
		last_commit_lsn pg_lsn NOT NULL,
		confirmed_lsn pg_lsn NOT NULL,
		xacts bigint NOT NULL DEFAULT 0,
		commands bigint NOT NULL DEFAULT 0,
		bytes bigint NOT NULL DEFAULT 0,
		stored_bytes bigint NOT NULL DEFAULT 0,
		updated_at timestamptz,
		host text, pid int, started_at timestamptz,
		state text, error text, stopped_at timestamptz)`,
	`CREATE TABLE ` + Schema + `.subscriptions (
		name text PRIMARY KEY REFERENCES ` + Schema + `.publication ON DELETE CASCADE,
		subscriber text NOT NULL,
		mode text NOT NULL,
		applied_cmd_id bigint NOT NULL DEFAULT 0,
		applied_lsn pg_lsn,
		updated_at timestamptz,
		agent_host text, agent_pid int, agent_mode text, agent_started_at timestamptz,
		agent_state text, agent_error text, agent_stopped_at timestamptz)`,
}

// publicationDDL creates one publication's command stream: its chunks
// (see chunk.go) and every version of its tables' Relation messages, which
// an agent starting at any position needs and which outlive the chunks
// that carried them.
func publicationDDL(publication string) []string {
	return []string{
		`CREATE TABLE ` + commandsTable(publication) + ` (
			first_cmd bigint PRIMARY KEY,
			last_cmd bigint NOT NULL,
			changes int NOT NULL,
			xacts int NOT NULL,
			raw_bytes int NOT NULL,
			data bytea NOT NULL)`,
		// Chunks are compressed already.
		`ALTER TABLE ` + commandsTable(publication) + ` ALTER COLUMN data SET STORAGE EXTERNAL`,
		`CREATE TABLE ` + relationsTable(publication) + ` (
			cmd_id bigint PRIMARY KEY,
			rel_id oid NOT NULL,
			data bytea NOT NULL)`,
	}
}

// subscriberDDL creates the subscriber's bookkeeping: the subscription row
// holds the last command applied, written by advance() in the same
// transaction as the changes it covers (exactly once); guard() makes a
// pipelined message fail unless it runs inside the transaction the agent
// opened for it.
var subscriberDDL = []string{
	"CREATE SCHEMA IF NOT EXISTS " + Schema,
	"COMMENT ON SCHEMA " + Schema + " IS " + quoteLiteral(subscriberMarker),
	`CREATE TABLE IF NOT EXISTS ` + Schema + `.subscription (
		name text PRIMARY KEY,
		publication text NOT NULL,
		publisher text NOT NULL,
		mode text NOT NULL,
		last_cmd_id bigint NOT NULL,
		last_lsn pg_lsn NOT NULL,
		last_commit_time timestamptz,
		xacts bigint NOT NULL DEFAULT 0,
		applied_at timestamptz)`,
	`CREATE OR REPLACE FUNCTION ` + Schema + `.advance(p_name text, p_from bigint, p_to bigint, p_lsn pg_lsn, p_time timestamptz, p_xacts bigint)
	RETURNS void LANGUAGE plpgsql AS $$
	BEGIN
		UPDATE ` + Schema + `.subscription
		   SET last_cmd_id = p_to, last_lsn = p_lsn, last_commit_time = p_time, xacts = xacts + p_xacts, applied_at = now()
		 WHERE name = p_name AND last_cmd_id = p_from;
		IF NOT FOUND THEN
			RAISE EXCEPTION 'dbrig: subscription % is no longer at command %: another distribution agent applied commands', p_name, p_from
				USING ERRCODE = 'DR001';
		END IF;
	END $$`,
	`CREATE OR REPLACE FUNCTION ` + Schema + `.guard(p_token text)
	RETURNS void LANGUAGE plpgsql AS $$
	BEGIN
		IF current_setting('dbrig.batch', true) IS DISTINCT FROM p_token THEN
			RAISE EXCEPTION 'dbrig: a pipelined batch arrived outside its transaction (an earlier one failed)'
				USING ERRCODE = 'DR002';
		END IF;
	END $$`,
}

// distributionState is what the publisher's server says of a distribution
// database.
type distributionState int

const (
	distMissing distributionState = iota
	distOurs
	distForeign // exists, but dbrig did not create it (or an older layout)
)

// lookupDistribution reads whether the distribution database exists on the
// publisher's server and whether it is dbrig's.
func lookupDistribution(ctx context.Context, pub *pgx.Conn, name string) (distributionState, string, error) {
	b := &pgx.Batch{}
	var state distributionState
	var comment string
	queueLookupDistribution(b, name, &state, &comment)
	err := pub.SendBatch(ctx, b).Close()
	return state, comment, err
}

// queueLookupDistribution queues on b the read of lookupDistribution,
// which sets state and comment.
func queueLookupDistribution(b *pgx.Batch, name string, state *distributionState, comment *string) {
	b.Queue("SELECT shobj_description(oid, 'pg_database') FROM pg_database WHERE datname = $1", name).QueryRow(func(row pgx.Row) error {
		var c *string
		err := row.Scan(&c)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			*state = distMissing
		case err != nil:
			return fmt.Errorf("look up database %q: %w", name, err)
		case c != nil && *c == distributionMarker:
			*state = distOurs
		case c != nil && strings.HasPrefix(*c, "dbrig distribution database"):
			*state, *comment = distForeign, *c
		default:
			*state = distForeign
		}
		return nil
	})
}

// publicationRecord is a publication as the distribution database records
// it.
type publicationRecord struct {
	Name              string
	PublisherDatabase string
	BinaryValues      bool
}

// lookupPublication reads a publication's catalog row; ok is false when
// the distribution database does not record it.
func lookupPublication(ctx context.Context, dist *pgx.Conn, name string) (rec publicationRecord, ok bool, err error) {
	err = dist.QueryRow(ctx, "SELECT name, publisher_database, binary_values FROM "+Schema+".publication WHERE name = $1", name).
		Scan(&rec.Name, &rec.PublisherDatabase, &rec.BinaryValues)
	if errors.Is(err, pgx.ErrNoRows) {
		return rec, false, nil
	}
	if err != nil {
		return rec, false, fmt.Errorf("read the catalog: %w", err)
	}
	return rec, true, nil
}

// publicationNames lists the publications a distribution database serves.
func publicationNames(ctx context.Context, dist *pgx.Conn) ([]string, error) {
	rows, err := dist.Query(ctx, "SELECT name FROM "+Schema+".publication ORDER BY name")
	if err != nil {
		return nil, fmt.Errorf("read the catalog: %w", err)
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

// openReplication connects to the publisher's server and the distribution
// database and checks that the catalog records the replication cfg names
// for cfg's publisher database: every action but setup starts here. The
// caller closes both connections.
func openReplication(ctx context.Context, cfg Config, app string) (pub, dist *pgx.Conn, rec publicationRecord, err error) {
	pub, err = pgxConnect(ctx, cfg.Publisher, app)
	if err != nil {
		return nil, nil, rec, &ServerError{Err: fmt.Errorf("publisher: %w", err)}
	}
	fail := func(e error) (*pgx.Conn, *pgx.Conn, publicationRecord, error) {
		pub.Close(context.WithoutCancel(ctx))
		if dist != nil {
			dist.Close(context.WithoutCancel(ctx))
		}
		return nil, nil, rec, e
	}
	state, comment, err := lookupDistribution(ctx, pub, cfg.DistributionDB)
	switch {
	case err != nil:
		return fail(&ServerError{Err: fmt.Errorf("publisher %s: %w", cfg.Publisher, err)})
	case state == distMissing:
		return fail(&ServerError{Err: fmt.Errorf("no replication %q: the publisher's server has no distribution database %q (set up with dbrig replicate setup, or name the database with --distribution-db)",
			cfg.Publication, cfg.DistributionDB)})
	case state == distForeign && comment != "":
		return fail(&ServerError{Err: fmt.Errorf("database %q on the publisher's server is a distribution database of another dbrig version (%q): this dbrig does not change it",
			cfg.DistributionDB, comment)})
	case state == distForeign:
		return fail(&ServerError{Err: fmt.Errorf("database %q on the publisher's server is not dbrig's distribution database: dbrig does not touch it",
			cfg.DistributionDB)})
	}
	dist, err = pgxConnect(ctx, cfg.Distribution(), app)
	if err != nil {
		return fail(&ServerError{Err: fmt.Errorf("distribution database: %w", err)})
	}
	rec, ok, err := lookupPublication(ctx, dist, cfg.Publication)
	if err != nil {
		return fail(&ServerError{Err: fmt.Errorf("distribution database %s: %w", cfg.Distribution(), err)})
	}
	if !ok {
		names, _ := publicationNames(ctx, dist)
		serves := "none"
		if len(names) > 0 {
			serves = strings.Join(names, ", ")
		}
		var foreign []string
		var n int
		if pub.QueryRow(ctx, "SELECT count(*) FROM pg_publication WHERE pubname = $1", cfg.Publication).Scan(&n) == nil && n > 0 {
			foreign = append(foreign, fmt.Sprintf("publication %q", cfg.Publication))
		}
		if pub.QueryRow(ctx, "SELECT count(*) FROM pg_replication_slots WHERE slot_name = $1", cfg.Publication).Scan(&n) == nil && n > 0 {
			foreign = append(foreign, fmt.Sprintf("replication slot %q", cfg.Publication))
		}
		if len(foreign) > 0 {
			return fail(&ServerError{Err: fmt.Errorf("no replication %q in the distribution database %q (it serves: %s): the %s on the publisher is not dbrig's, and dbrig does not touch it",
				cfg.Publication, cfg.DistributionDB, serves, strings.Join(foreign, " and "))})
		}
		return fail(&ServerError{Err: fmt.Errorf("no replication %q in the distribution database %q (it serves: %s)", cfg.Publication, cfg.DistributionDB, serves)})
	}
	if rec.PublisherDatabase != cfg.Publisher.Database {
		return fail(&ServerError{Err: fmt.Errorf("replication %q publishes database %q, not %q: name its database in --publisher",
			cfg.Publication, rec.PublisherDatabase, cfg.Publisher.Database)})
	}
	return pub, dist, rec, nil
}
