package replication

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/dbrig/dbrig/internal/engine/postgres"
)

// pgxConnect opens a pgx connection with dbrig's session parameters.
func pgxConnect(ctx context.Context, ci postgres.ConnInfo, app string) (*pgx.Conn, error) {
	return pgxConnectMode(ctx, ci, app, 0)
}

// setupConnect opens a session of setup's on the publisher's server.
// Setup runs each statement once, so it sends each with its parameters in
// one round trip (their types inferred by the server, as for literals)
// instead of pgx's default, which prepares a statement first: run from the
// subscriber's site, every round trip crosses the WAN.
func setupConnect(ctx context.Context, ci postgres.ConnInfo) (*pgx.Conn, error) {
	return pgxConnectMode(ctx, ci, "dbrig setup", pgx.QueryExecModeExec)
}

// pgxConnectMode is pgxConnect with a query mode (0 leaves the
// connection's default).
func pgxConnectMode(ctx context.Context, ci postgres.ConnInfo, app string, mode pgx.QueryExecMode) (*pgx.Conn, error) {
	cfg, err := ci.ConnConfig()
	if err != nil {
		return nil, err
	}
	for k, v := range sessionParams {
		cfg.RuntimeParams[k] = v
	}
	cfg.RuntimeParams["application_name"] = app
	if mode != 0 {
		cfg.DefaultQueryExecMode = mode
	}
	c, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", ci, err)
	}
	return c, nil
}

// supportedTypes are the column types dbrig replicates, by type OID: those
// whose text form round-trips exactly through the agent and that its tests
// cover.
var supportedTypes = map[uint32]string{
	16:   "boolean",
	17:   "bytea",
	20:   "bigint",
	21:   "smallint",
	23:   "integer",
	25:   "text",
	114:  "json",
	700:  "real",
	701:  "double precision",
	1042: "character",
	1043: "character varying",
	1082: "date",
	1114: "timestamp without time zone",
	1184: "timestamp with time zone",
	1700: "numeric",
	2950: "uuid",
	3802: "jsonb",
}

// SupportedTypes lists the replicable column types, for messages and docs.
func SupportedTypes() []string {
	var out []string
	for _, n := range supportedTypes {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// tableColumn is a column of a table as the catalog describes it.
type tableColumn struct {
	Name      string
	TypeID    uint32
	Type      string // format_type: "character varying(20)"
	NotNull   bool
	Generated bool
	Storage   byte
}

// tableInfo is a table as the catalog describes it.
type tableInfo struct {
	Name     TableName
	OID      uint32
	Kind     byte // relkind
	Identity byte // relreplident
	Columns  []tableColumn
	Key      []string // primary key columns, in key order
	// size is the table's size on disk when it was described: a
	// snapshot's copy plans its streams' block ranges from it (the last
	// range open, for rows in blocks added since).
	size tableSize
}

// copyColumns are the columns that hold data (not generated).
func (t *tableInfo) copyColumns() []string {
	var out []string
	for _, c := range t.Columns {
		if !c.Generated {
			out = append(out, c.Name)
		}
	}
	return out
}

func (t *tableInfo) column(name string) *tableColumn {
	for i := range t.Columns {
		if t.Columns[i].Name == name {
			return &t.Columns[i]
		}
	}
	return nil
}

// describeTable reads one table's catalog entry; ok is false when the table
// does not exist.
func describeTable(ctx context.Context, c *pgx.Conn, name TableName) (ti *tableInfo, ok bool, err error) {
	b := &pgx.Batch{}
	d := queueDescribe(b, name)
	if err := c.SendBatch(ctx, b).Close(); err != nil {
		return nil, false, err
	}
	return d.info, d.info != nil, nil
}

// describedTable is a table's catalog entry as a batch reads it: info is
// nil when the table does not exist.
type describedTable struct {
	info *tableInfo
}

// queueDescribe queues on b the reads of one table's catalog entry, each
// naming the table rather than its OID, so that any number of tables are
// read in the batch's one round trip: run from the subscriber's site,
// setup pays each round trip to the publisher across the WAN.
func queueDescribe(b *pgx.Batch, name TableName) *describedTable {
	d := &describedTable{}
	ti := &tableInfo{Name: name}
	const oid = `(SELECT c.oid FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1 AND c.relname = $2)`
	b.Queue(`SELECT c.oid, c.relkind::text, c.relreplident::text, pg_relation_size(c.oid), current_setting('block_size')::bigint FROM pg_class c
		JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1 AND c.relname = $2`,
		name.Schema, name.Name).QueryRow(func(row pgx.Row) error {
		var kind, ident string
		var blockSize int64
		err := row.Scan(&ti.OID, &kind, &ident, &ti.size.bytes, &blockSize)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("look up table %s: %w", name, err)
		}
		ti.Kind, ti.Identity = kind[0], ident[0]
		if blockSize > 0 {
			ti.size.blocks = ti.size.bytes / blockSize
		}
		d.info = ti
		return nil
	})
	b.Queue(`SELECT a.attname, a.atttypid, format_type(a.atttypid, a.atttypmod), a.attnotnull,
			a.attgenerated <> '', a.attstorage::text
		FROM pg_attribute a WHERE a.attrelid = `+oid+` AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum`,
		name.Schema, name.Name).Query(func(rows pgx.Rows) error {
		for rows.Next() {
			var col tableColumn
			var storage string
			if err := rows.Scan(&col.Name, &col.TypeID, &col.Type, &col.NotNull, &col.Generated, &storage); err != nil {
				return fmt.Errorf("read the columns of %s: %w", name, err)
			}
			col.Storage = storage[0]
			ti.Columns = append(ti.Columns, col)
		}
		if err := rows.Err(); err != nil {
			return fmt.Errorf("read the columns of %s: %w", name, err)
		}
		return nil
	})
	b.Queue(`SELECT coalesce(array_agg(a.attname ORDER BY k.ord), '{}') FROM pg_index i
		CROSS JOIN LATERAL unnest(i.indkey) WITH ORDINALITY AS k(attnum, ord)
		JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum
		WHERE i.indrelid = `+oid+` AND i.indisprimary`, name.Schema, name.Name).QueryRow(func(row pgx.Row) error {
		if err := row.Scan(&ti.Key); err != nil {
			return fmt.Errorf("read the primary key of %s: %w", name, err)
		}
		return nil
	})
	return d
}

// checkPublishable reports why a publisher table cannot be replicated.
func checkPublishable(ti *tableInfo) []error {
	var errs []error
	switch ti.Kind {
	case 'r':
	case 'p':
		errs = append(errs, fmt.Errorf("table %s is partitioned: publish its partitions instead", ti.Name))
	default:
		errs = append(errs, fmt.Errorf("%s is not a table (relkind %q)", ti.Name, ti.Kind))
	}
	if len(ti.Key) == 0 {
		errs = append(errs, fmt.Errorf("table %s has no primary key: dbrig identifies replicated rows by their primary key; add one (ALTER TABLE %s ADD PRIMARY KEY (...))",
			ti.Name, ti.Name.Quoted()))
	}
	if ti.Identity != 'd' && ti.Identity != 'f' {
		what := map[byte]string{'n': "NOTHING", 'i': "USING INDEX"}[ti.Identity]
		errs = append(errs, fmt.Errorf("table %s has REPLICA IDENTITY %s: dbrig needs the primary key as replica identity (ALTER TABLE %s REPLICA IDENTITY DEFAULT)",
			ti.Name, what, ti.Name.Quoted()))
	}
	var bad []string
	for _, c := range ti.Columns {
		if _, ok := supportedTypes[c.TypeID]; !ok && !c.Generated {
			bad = append(bad, fmt.Sprintf("%s (%s)", c.Name, c.Type))
		}
	}
	if len(bad) > 0 {
		errs = append(errs, fmt.Errorf("table %s has columns of types dbrig does not replicate: %s; supported: %s",
			ti.Name, strings.Join(bad, ", "), strings.Join(SupportedTypes(), ", ")))
	}
	return errs
}

// checkSubscriberTable reports why a subscriber table cannot receive a
// publisher table's rows.
func checkSubscriberTable(pub, sub *tableInfo) []error {
	var errs []error
	if sub.Kind != 'r' {
		errs = append(errs, fmt.Errorf("subscriber %s is not a plain table (relkind %q)", sub.Name, sub.Kind))
	}
	if !slices.Equal(pub.Key, sub.Key) {
		if len(sub.Key) == 0 {
			errs = append(errs, fmt.Errorf("subscriber table %s has no primary key: add the publisher's (%s)", sub.Name, strings.Join(pub.Key, ", ")))
		} else {
			errs = append(errs, fmt.Errorf("subscriber table %s has primary key (%s), the publisher's is (%s)",
				sub.Name, strings.Join(sub.Key, ", "), strings.Join(pub.Key, ", ")))
		}
	}
	for _, pc := range pub.Columns {
		if pc.Generated {
			continue
		}
		sc := sub.column(pc.Name)
		switch {
		case sc == nil:
			errs = append(errs, fmt.Errorf("subscriber table %s has no column %s (%s)", sub.Name, pc.Name, pc.Type))
		case sc.Generated:
			errs = append(errs, fmt.Errorf("subscriber table %s: column %s is generated there but not on the publisher", sub.Name, pc.Name))
		case sc.Type != pc.Type:
			errs = append(errs, fmt.Errorf("subscriber table %s: column %s is %s there, %s on the publisher", sub.Name, pc.Name, sc.Type, pc.Type))
		}
	}
	return errs
}

// quoteList quotes identifiers and joins them with commas.
func quoteList(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = quoteIdent(n)
	}
	return strings.Join(q, ", ")
}
