package replication

import (
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

// ddlReads are the catalog rows a table's DDL is made of, as one batch
// reads them for every table (queueDDLReads): run from the subscriber's
// site, setup pays each round trip to the publisher across the WAN.
type ddlReads struct {
	ti          *tableInfo
	seqs        []ddlSequence
	persistence string
	reloptions  []string
	comment     *string
	cols        []ddlColumn
	constraints []ddlConstraint
	indexes     []string
}

// ddlColumn is a column as pg_attribute and pg_attrdef describe it.
type ddlColumn struct {
	name, typ, generated, def, collation, storage, comment string
	notNull, ownStorage                                    bool
}

// ddlConstraint is a CHECK, primary key, UNIQUE or exclusion constraint.
type ddlConstraint struct{ name, kind, def string }

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

// queueDDLReads queues on b the reads of ti's DDL from the publisher's
// catalog: the sequences its columns use (serial and nextval() defaults,
// 'n' dependencies of the defaults; identity, 'i'), the table's own
// options, its columns, constraints and secondary indexes.
func queueDDLReads(b *pgx.Batch, ti *tableInfo) *ddlReads {
	r := &ddlReads{ti: ti}
	r.queueSequences(b)
	b.Queue("SELECT relpersistence::text, coalesce(reloptions, '{}'), obj_description(oid, 'pg_class') FROM pg_class WHERE oid = $1",
		ti.OID).QueryRow(func(row pgx.Row) error {
		if err := row.Scan(&r.persistence, &r.reloptions, &r.comment); err != nil {
			return fmt.Errorf("read table %s: %w", ti.Name, err)
		}
		return nil
	})
	b.Queue(`SELECT a.attname, format_type(a.atttypid, a.atttypmod), a.attnotnull, a.attgenerated::text,
			coalesce(pg_get_expr(ad.adbin, ad.adrelid), ''),
			CASE WHEN a.attcollation <> t.typcollation AND a.attcollation <> 0
				THEN (SELECT quote_ident(cn.nspname) || '.' || quote_ident(c.collname) FROM pg_collation c JOIN pg_namespace cn ON cn.oid = c.collnamespace WHERE c.oid = a.attcollation)
				ELSE '' END,
			a.attstorage <> t.typstorage, a.attstorage::text, coalesce(col_description(a.attrelid, a.attnum), '')
		FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid
		LEFT JOIN pg_attrdef ad ON ad.adrelid = a.attrelid AND ad.adnum = a.attnum
		WHERE a.attrelid = $1 AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum`, ti.OID).Query(func(rows pgx.Rows) error {
		for rows.Next() {
			var c ddlColumn
			if err := rows.Scan(&c.name, &c.typ, &c.notNull, &c.generated, &c.def, &c.collation, &c.ownStorage, &c.storage, &c.comment); err != nil {
				return fmt.Errorf("read the columns of %s: %w", ti.Name, err)
			}
			r.cols = append(r.cols, c)
		}
		if err := rows.Err(); err != nil {
			return fmt.Errorf("read the columns of %s: %w", ti.Name, err)
		}
		return nil
	})
	b.Queue(`SELECT conname, contype::text, pg_get_constraintdef(oid) FROM pg_constraint
		WHERE conrelid = $1 AND contype IN ('c', 'p', 'u', 'x') ORDER BY contype <> 'p', conname`, ti.OID).Query(func(rows pgx.Rows) error {
		for rows.Next() {
			var c ddlConstraint
			if err := rows.Scan(&c.name, &c.kind, &c.def); err != nil {
				return fmt.Errorf("read the constraints of %s: %w", ti.Name, err)
			}
			r.constraints = append(r.constraints, c)
		}
		if err := rows.Err(); err != nil {
			return fmt.Errorf("read the constraints of %s: %w", ti.Name, err)
		}
		return nil
	})
	b.Queue(`SELECT pg_get_indexdef(i.indexrelid) FROM pg_index i
		WHERE i.indrelid = $1 AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = i.indexrelid AND c.conrelid = i.indrelid)
		ORDER BY i.indexrelid::regclass::text`, ti.OID).Query(func(rows pgx.Rows) error {
		for rows.Next() {
			var def string
			if err := rows.Scan(&def); err != nil {
				return fmt.Errorf("read the indexes of %s: %w", ti.Name, err)
			}
			r.indexes = append(r.indexes, def)
		}
		if err := rows.Err(); err != nil {
			return fmt.Errorf("read the indexes of %s: %w", ti.Name, err)
		}
		return nil
	})
	return r
}

// queueSequences queues the read of the sequences r's table's columns use:
// serial and nextval() defaults ('n' dependencies of the defaults) and
// identity ('i').
func (r *ddlReads) queueSequences(b *pgx.Batch) {
	ti := r.ti
	b.Queue(`SELECT DISTINCT s.oid, quote_ident(n.nspname) || '.' || quote_ident(s.relname), format_type(q.seqtypid, NULL),
			q.seqstart, q.seqincrement, q.seqmin, q.seqmax, q.seqcache, q.seqcycle,
			coalesce((SELECT a.attname FROM pg_depend o JOIN pg_attribute a ON a.attrelid = o.refobjid AND a.attnum = o.refobjsubid
				WHERE o.classid = 'pg_class'::regclass AND o.objid = s.oid AND o.refobjid = $1 AND o.deptype IN ('a', 'i')), ''),
			coalesce((SELECT o.deptype::text FROM pg_depend o WHERE o.classid = 'pg_class'::regclass AND o.objid = s.oid AND o.refobjid = $1 AND o.deptype IN ('a', 'i')), '')
		FROM pg_class s JOIN pg_namespace n ON n.oid = s.relnamespace JOIN pg_sequence q ON q.seqrelid = s.oid
		WHERE s.relkind = 'S' AND (
			s.oid IN (SELECT d.refobjid FROM pg_attrdef ad JOIN pg_depend d ON d.classid = 'pg_attrdef'::regclass AND d.objid = ad.oid
				WHERE ad.adrelid = $1 AND d.refclassid = 'pg_class'::regclass)
			OR s.oid IN (SELECT o.objid FROM pg_depend o WHERE o.classid = 'pg_class'::regclass AND o.refobjid = $1 AND o.deptype IN ('a', 'i')))
		ORDER BY 2`, ti.OID).Query(func(rows pgx.Rows) error {
		for rows.Next() {
			var s ddlSequence
			if err := rows.Scan(&s.oid, &s.name, &s.typ, &s.start, &s.inc, &s.min, &s.max, &s.cache, &s.cycle, &s.ownerCol, &s.deptype); err != nil {
				return fmt.Errorf("read the sequences of %s: %w", ti.Name, err)
			}
			r.seqs = append(r.seqs, s)
		}
		if err := rows.Err(); err != nil {
			return fmt.Errorf("read the sequences of %s: %w", ti.Name, err)
		}
		return nil
	})
}

// build makes the table's DDL from what was read, the publisher's
// sequence positions and the sequences the subscriber has already.
func (r *ddlReads) build(positions map[string]sequencePos, existing map[string]bool) *tableDDL {
	ti := r.ti
	d := &tableDDL{}
	q := ti.Name.Quoted()
	d.before = append(d.before, "CREATE SCHEMA IF NOT EXISTS "+quoteIdent(ti.Name.Schema))
	identity := map[string]ddlSequence{}
	for _, s := range r.seqs {
		d.sequences = append(d.sequences, positions[s.name])
		if s.deptype == "i" {
			identity[s.ownerCol] = s
			continue
		}
		if !existing[s.name] {
			d.before = append(d.before, fmt.Sprintf("CREATE SEQUENCE %s AS %s %s", s.name, s.typ, s.options()))
		}
	}
	cols := r.columns(identity)
	var checks []string
	for _, c := range r.constraints {
		if c.kind == "c" {
			checks = append(checks, "CONSTRAINT "+quoteIdent(c.name)+" "+c.def)
		} else {
			d.after = append(d.after, "ALTER TABLE ONLY "+q+" ADD CONSTRAINT "+quoteIdent(c.name)+" "+c.def)
		}
	}
	create := "CREATE TABLE "
	if r.persistence == "u" {
		create = "CREATE UNLOGGED TABLE "
	}
	create += q + " (\n\t" + strings.Join(append(cols.defs, checks...), ",\n\t") + "\n)"
	if len(r.reloptions) > 0 {
		create += " WITH (" + strings.Join(r.reloptions, ", ") + ")"
	}
	d.before = append(d.before, create)
	d.before = append(d.before, cols.alters...)
	for _, s := range r.seqs {
		if s.deptype == "a" {
			d.before = append(d.before, "ALTER SEQUENCE "+s.name+" OWNED BY "+q+"."+quoteIdent(s.ownerCol))
		}
	}
	if r.comment != nil {
		d.before = append(d.before, "COMMENT ON TABLE "+q+" IS "+quoteLiteral(*r.comment))
	}
	d.before = append(d.before, cols.comments...)
	d.after = append(d.after, r.indexes...)
	if ti.Identity == 'f' {
		d.after = append(d.after, "ALTER TABLE ONLY "+q+" REPLICA IDENTITY FULL")
	}
	return d
}

// tableColumns are a table's column definitions, the ALTERs that set
// their storage and identity, and their comments.
type tableColumns struct {
	defs, alters, comments []string
}

// columns writes the table's columns as CREATE TABLE and ALTER TABLE
// take them.
func (r *ddlReads) columns(identity map[string]ddlSequence) tableColumns {
	q := r.ti.Name.Quoted()
	var out tableColumns
	for _, col := range r.cols {
		name := col.name
		c := quoteIdent(name) + " " + col.typ
		if col.collation != "" {
			c += " COLLATE " + col.collation
		}
		switch {
		case col.generated == "s":
			c += " GENERATED ALWAYS AS (" + col.def + ") STORED"
		case col.def != "":
			c += " DEFAULT " + col.def
		}
		if col.notNull {
			c += " NOT NULL"
		}
		out.defs = append(out.defs, c)
		if col.ownStorage {
			mode := map[string]string{"p": "PLAIN", "e": "EXTERNAL", "m": "MAIN", "x": "EXTENDED"}[col.storage]
			out.alters = append(out.alters, "ALTER TABLE ONLY "+q+" ALTER COLUMN "+quoteIdent(name)+" SET STORAGE "+mode)
		}
		if s, ok := identity[name]; ok {
			// BY DEFAULT whatever the publisher's kind: the agent inserts
			// the publisher's values, which an ALWAYS identity refuses.
			out.alters = append(out.alters, fmt.Sprintf("ALTER TABLE %s ALTER COLUMN %s ADD GENERATED BY DEFAULT AS IDENTITY (SEQUENCE NAME %s %s)",
				q, quoteIdent(name), s.name, s.options()))
		}
		if col.comment != "" {
			out.comments = append(out.comments, "COMMENT ON COLUMN "+q+"."+quoteIdent(name)+" IS "+quoteLiteral(col.comment))
		}
	}
	return out
}

// setSequences are the statements that set the table's sequences to the
// publisher's positions, in the subscriber's transaction (without
// parameters: they go in one query with a COPY).
func (d *tableDDL) setSequences() []string {
	var out []string
	for _, s := range d.sequences {
		out = append(out, fmt.Sprintf("SELECT setval(%s::regclass, %d, %t)", quoteLiteral(s.name), s.last, s.isCalled))
	}
	return out
}
