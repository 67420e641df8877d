package replication

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
)

// tableDDL is what it takes to create a published table on the subscriber
// as pg_dump --schema-only of that table would: the sequences its columns
// use (created when missing, then set to the publisher's positions), the
// table with its columns, defaults, identity, NOT NULL, CHECK constraints,
// storage and comments; and, once the rows are in, its primary key, UNIQUE
// and exclusion constraints and secondary indexes. Foreign keys and
// triggers stay behind: a foreign key may name a table that is not
// replicated, and the subscriber's triggers are its own business.
type tableDDL struct {
	before, after []string
	// sequences are set to the publisher's position after the copy.
	sequences []sequencePos
}

type sequencePos struct {
	name     string // quoted, schema-qualified
	last     int64
	isCalled bool
}

// describeDDL reads a table's DDL from the publisher's catalog. existing
// tells whether a sequence already exists on the subscriber.
func describeDDL(ctx context.Context, pub *pgx.Conn, ti *tableInfo, existing func(seq string) (bool, error)) (*tableDDL, error) {
	d := &tableDDL{}
	q := ti.Name.Quoted()
	d.before = append(d.before, "CREATE SCHEMA IF NOT EXISTS "+quoteIdent(ti.Name.Schema))
	seqs, err := readSequences(ctx, pub, ti)
	if err != nil {
		return nil, err
	}
	identity, err := d.addSequences(ctx, pub, seqs, existing)
	if err != nil {
		return nil, err
	}
	var persistence string
	var reloptions []string
	var comment *string
	if err := pub.QueryRow(ctx, "SELECT relpersistence::text, coalesce(reloptions, '{}'), obj_description(oid, 'pg_class') FROM pg_class WHERE oid = $1",
		ti.OID).Scan(&persistence, &reloptions, &comment); err != nil {
		return nil, fmt.Errorf("read table %s: %w", ti.Name, err)
	}
	cols, err := readColumns(ctx, pub, ti, identity)
	if err != nil {
		return nil, err
	}
	checks, err := d.addConstraints(ctx, pub, ti)
	if err != nil {
		return nil, err
	}
	create := "CREATE TABLE "
	if persistence == "u" {
		create = "CREATE UNLOGGED TABLE "
	}
	create += q + " (\n\t" + strings.Join(append(cols.defs, checks...), ",\n\t") + "\n)"
	if len(reloptions) > 0 {
		create += " WITH (" + strings.Join(reloptions, ", ") + ")"
	}
	d.before = append(d.before, create)
	d.before = append(d.before, cols.alters...)
	for _, s := range seqs {
		if s.deptype == "a" {
			d.before = append(d.before, "ALTER SEQUENCE "+s.name+" OWNED BY "+q+"."+quoteIdent(s.ownerCol))
		}
	}
	if comment != nil {
		d.before = append(d.before, "COMMENT ON TABLE "+q+" IS "+quoteLiteral(*comment))
	}
	d.before = append(d.before, cols.comments...)
	if err := d.addIndexes(ctx, pub, ti); err != nil {
		return nil, err
	}
	if ti.Identity == 'f' {
		d.after = append(d.after, "ALTER TABLE ONLY "+q+" REPLICA IDENTITY FULL")
	}
	return d, nil
}

// ddlSequence is a sequence a table's columns depend on.
type ddlSequence struct {
	oid                          uint32
	name, typ, ownerCol, deptype string
	start, inc, min, max, cache  int64
	cycle                        bool
}

// options are the sequence's options as CREATE SEQUENCE takes them.
func (s ddlSequence) options() string {
	o := fmt.Sprintf("START WITH %d INCREMENT BY %d MINVALUE %d MAXVALUE %d CACHE %d", s.start, s.inc, s.min, s.max, s.cache)
	if s.cycle {
		o += " CYCLE"
	}
	return o
}

// readSequences reads the sequences the columns depend on: serial and
// nextval() defaults ('n' dependencies of the defaults), identity ('i').
func readSequences(ctx context.Context, pub *pgx.Conn, ti *tableInfo) ([]ddlSequence, error) {
	rows, err := pub.Query(ctx, `SELECT DISTINCT s.oid, quote_ident(n.nspname) || '.' || quote_ident(s.relname), format_type(q.seqtypid, NULL),
			q.seqstart, q.seqincrement, q.seqmin, q.seqmax, q.seqcache, q.seqcycle,
			coalesce((SELECT a.attname FROM pg_depend o JOIN pg_attribute a ON a.attrelid = o.refobjid AND a.attnum = o.refobjsubid
				WHERE o.classid = 'pg_class'::regclass AND o.objid = s.oid AND o.refobjid = $1 AND o.deptype IN ('a', 'i')), ''),
			coalesce((SELECT o.deptype::text FROM pg_depend o WHERE o.classid = 'pg_class'::regclass AND o.objid = s.oid AND o.refobjid = $1 AND o.deptype IN ('a', 'i')), '')
		FROM pg_class s JOIN pg_namespace n ON n.oid = s.relnamespace JOIN pg_sequence q ON q.seqrelid = s.oid
		WHERE s.relkind = 'S' AND (
			s.oid IN (SELECT d.refobjid FROM pg_attrdef ad JOIN pg_depend d ON d.classid = 'pg_attrdef'::regclass AND d.objid = ad.oid
				WHERE ad.adrelid = $1 AND d.refclassid = 'pg_class'::regclass)
			OR s.oid IN (SELECT o.objid FROM pg_depend o WHERE o.classid = 'pg_class'::regclass AND o.refobjid = $1 AND o.deptype IN ('a', 'i')))
		ORDER BY 2`, ti.OID)
	if err != nil {
		return nil, fmt.Errorf("read the sequences of %s: %w", ti.Name, err)
	}
	var seqs []ddlSequence
	for rows.Next() {
		var s ddlSequence
		if err := rows.Scan(&s.oid, &s.name, &s.typ, &s.start, &s.inc, &s.min, &s.max, &s.cache, &s.cycle, &s.ownerCol, &s.deptype); err != nil {
			rows.Close()
			return nil, fmt.Errorf("read the sequences of %s: %w", ti.Name, err)
		}
		seqs = append(seqs, s)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read the sequences of %s: %w", ti.Name, err)
	}
	return seqs, nil
}

// addSequences records each sequence's position, creates those the
// subscriber lacks (an identity's comes with its column), and returns the
// identity sequences by column.
func (d *tableDDL) addSequences(ctx context.Context, pub *pgx.Conn, seqs []ddlSequence, existing func(seq string) (bool, error)) (map[string]ddlSequence, error) {
	identity := map[string]ddlSequence{}
	for _, s := range seqs {
		var pos sequencePos
		pos.name = s.name
		if err := pub.QueryRow(ctx, "SELECT last_value, is_called FROM "+s.name).Scan(&pos.last, &pos.isCalled); err != nil {
			return nil, fmt.Errorf("read sequence %s: %w", s.name, err)
		}
		d.sequences = append(d.sequences, pos)
		if s.deptype == "i" {
			identity[s.ownerCol] = s
			continue
		}
		ok, err := existing(s.name)
		if err != nil {
			return nil, err
		}
		if !ok {
			d.before = append(d.before, fmt.Sprintf("CREATE SEQUENCE %s AS %s %s", s.name, s.typ, s.options()))
		}
	}
	return identity, nil
}

// tableColumns are a table's column definitions, the ALTERs that set
// their storage and identity, and their comments.
type tableColumns struct {
	defs, alters, comments []string
}

// readColumns reads a table's columns as CREATE TABLE and ALTER TABLE
// write them.
func readColumns(ctx context.Context, pub *pgx.Conn, ti *tableInfo, identity map[string]ddlSequence) (tableColumns, error) {
	q := ti.Name.Quoted()
	var out tableColumns
	rows, err := pub.Query(ctx, `SELECT a.attname, format_type(a.atttypid, a.atttypmod), a.attnotnull, a.attgenerated::text,
			coalesce(pg_get_expr(ad.adbin, ad.adrelid), ''),
			CASE WHEN a.attcollation <> t.typcollation AND a.attcollation <> 0
				THEN (SELECT quote_ident(cn.nspname) || '.' || quote_ident(c.collname) FROM pg_collation c JOIN pg_namespace cn ON cn.oid = c.collnamespace WHERE c.oid = a.attcollation)
				ELSE '' END,
			a.attstorage <> t.typstorage, a.attstorage::text, coalesce(col_description(a.attrelid, a.attnum), '')
		FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid
		LEFT JOIN pg_attrdef ad ON ad.adrelid = a.attrelid AND ad.adnum = a.attnum
		WHERE a.attrelid = $1 AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum`, ti.OID)
	if err != nil {
		return out, fmt.Errorf("read the columns of %s: %w", ti.Name, err)
	}
	for rows.Next() {
		var name, typ, generated, def, collation, storage, colComment string
		var notNull, ownStorage bool
		if err := rows.Scan(&name, &typ, &notNull, &generated, &def, &collation, &ownStorage, &storage, &colComment); err != nil {
			rows.Close()
			return out, fmt.Errorf("read the columns of %s: %w", ti.Name, err)
		}
		c := quoteIdent(name) + " " + typ
		if collation != "" {
			c += " COLLATE " + collation
		}
		switch {
		case generated == "s":
			c += " GENERATED ALWAYS AS (" + def + ") STORED"
		case def != "":
			c += " DEFAULT " + def
		}
		if notNull {
			c += " NOT NULL"
		}
		out.defs = append(out.defs, c)
		if ownStorage {
			mode := map[string]string{"p": "PLAIN", "e": "EXTERNAL", "m": "MAIN", "x": "EXTENDED"}[storage]
			out.alters = append(out.alters, "ALTER TABLE ONLY "+q+" ALTER COLUMN "+quoteIdent(name)+" SET STORAGE "+mode)
		}
		if s, ok := identity[name]; ok {
			// BY DEFAULT whatever the publisher's kind: the agent inserts
			// the publisher's values, which an ALWAYS identity refuses.
			out.alters = append(out.alters, fmt.Sprintf("ALTER TABLE %s ALTER COLUMN %s ADD GENERATED BY DEFAULT AS IDENTITY (SEQUENCE NAME %s %s)",
				q, quoteIdent(name), s.name, s.options()))
		}
		if colComment != "" {
			out.comments = append(out.comments, "COMMENT ON COLUMN "+q+"."+quoteIdent(name)+" IS "+quoteLiteral(colComment))
		}
	}
	if err := rows.Err(); err != nil {
		return out, fmt.Errorf("read the columns of %s: %w", ti.Name, err)
	}
	return out, nil
}

// addConstraints reads the table's constraints: CHECKs are returned to go
// with the table, the others are added once the rows are in.
func (d *tableDDL) addConstraints(ctx context.Context, pub *pgx.Conn, ti *tableInfo) (checks []string, err error) {
	q := ti.Name.Quoted()
	rows, err := pub.Query(ctx, `SELECT conname, contype::text, pg_get_constraintdef(oid) FROM pg_constraint
		WHERE conrelid = $1 AND contype IN ('c', 'p', 'u', 'x') ORDER BY contype <> 'p', conname`, ti.OID)
	if err != nil {
		return nil, fmt.Errorf("read the constraints of %s: %w", ti.Name, err)
	}
	for rows.Next() {
		var name, kind, def string
		if err := rows.Scan(&name, &kind, &def); err != nil {
			rows.Close()
			return nil, fmt.Errorf("read the constraints of %s: %w", ti.Name, err)
		}
		if kind == "c" {
			checks = append(checks, "CONSTRAINT "+quoteIdent(name)+" "+def)
		} else {
			d.after = append(d.after, "ALTER TABLE ONLY "+q+" ADD CONSTRAINT "+quoteIdent(name)+" "+def)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read the constraints of %s: %w", ti.Name, err)
	}
	return checks, nil
}

// addIndexes adds the secondary indexes, those no constraint made, once
// the rows are in.
func (d *tableDDL) addIndexes(ctx context.Context, pub *pgx.Conn, ti *tableInfo) error {
	rows, err := pub.Query(ctx, `SELECT pg_get_indexdef(i.indexrelid) FROM pg_index i
		WHERE i.indrelid = $1 AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = i.indexrelid AND c.conrelid = i.indrelid)
		ORDER BY i.indexrelid::regclass::text`, ti.OID)
	if err != nil {
		return fmt.Errorf("read the indexes of %s: %w", ti.Name, err)
	}
	for rows.Next() {
		var def string
		if err := rows.Scan(&def); err != nil {
			rows.Close()
			return fmt.Errorf("read the indexes of %s: %w", ti.Name, err)
		}
		d.after = append(d.after, def)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read the indexes of %s: %w", ti.Name, err)
	}
	return nil
}

// setSequences sets the subscriber's sequences to the publisher's
// positions, so that a subscriber taking over goes on from them.
func (d *tableDDL) setSequences(ctx context.Context, tx pgx.Tx) error {
	for _, s := range d.sequences {
		if _, err := tx.Exec(ctx, "SELECT setval($1::regclass, $2, $3)", s.name, s.last, s.isCalled); err != nil {
			return fmt.Errorf("set sequence %s: %w", s.name, err)
		}
	}
	return nil
}
