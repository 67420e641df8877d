package replication

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
)

// VerifyOptions tune Verify.
type VerifyOptions struct {
	// MaxDifferences is how many differing keys to list per table
	// (default 10).
	MaxDifferences int
}

// VerifyResult compares publisher and subscriber, table by table.
type VerifyResult struct {
	Tables []TableVerify `json:"tables"`
	// Equal is true when every table holds the same rows on both sides.
	Equal bool `json:"equal"`
}

// TableVerify is one table's comparison: row counts and an
// order-independent checksum (the sum of a 64-bit hash of each row's text
// form) on each side; when they differ, the first differing keys.
type TableVerify struct {
	Table              string       `json:"table"`
	PublisherRows      int64        `json:"publisher_rows"`
	SubscriberRows     int64        `json:"subscriber_rows"`
	PublisherChecksum  string       `json:"publisher_checksum"`
	SubscriberChecksum string       `json:"subscriber_checksum"`
	Equal              bool         `json:"equal"`
	Differences        []Difference `json:"differences,omitempty"`
}

// Difference is one key whose row differs.
type Difference struct {
	Key  string `json:"key"`  // "(id)=(42)"
	What string `json:"what"` // "missing on the subscriber", "only on the subscriber", "differs"
}

func (d Difference) String() string { return d.Key + ": " + d.What }

// Verify compares every published table on the publisher and the
// subscriber. The tables are cfg.Tables, or when empty those recorded in
// the distribution database by Setup.
func Verify(ctx context.Context, cfg Config, opts VerifyOptions) (VerifyResult, error) {
	cfg = cfg.withDefaults()
	if opts.MaxDifferences <= 0 {
		opts.MaxDifferences = 10
	}
	var res VerifyResult
	pub, err := pgxConnect(ctx, cfg.Publisher, "dbrig verify")
	if err != nil {
		return res, &ServerError{Err: fmt.Errorf("publisher: %w", err)}
	}
	defer pub.Close(context.WithoutCancel(ctx))
	sub, err := pgxConnect(ctx, cfg.Subscriber, "dbrig verify")
	if err != nil {
		return res, &ServerError{Err: fmt.Errorf("subscriber: %w", err)}
	}
	defer sub.Close(context.WithoutCancel(ctx))
	tables := cfg.Tables
	if len(tables) == 0 {
		if tables, err = publishedTables(ctx, cfg); err != nil {
			return res, err
		}
	}
	res.Equal = true
	for _, t := range tables {
		tv, err := verifyTable(ctx, pub, sub, t, opts)
		if err != nil {
			return res, err
		}
		res.Tables = append(res.Tables, tv)
		res.Equal = res.Equal && tv.Equal
	}
	return res, nil
}

// publishedTables reads the tables Setup recorded in the distribution
// database.
func publishedTables(ctx context.Context, cfg Config) ([]TableName, error) {
	pub, dist, _, err := openReplication(ctx, cfg, "dbrig verify")
	if err != nil {
		return nil, err
	}
	pub.Close(context.WithoutCancel(ctx))
	defer dist.Close(context.WithoutCancel(ctx))
	rows, err := dist.Query(ctx, "SELECT schema_name, table_name FROM "+Schema+".tables WHERE publication = $1 ORDER BY 1, 2", cfg.Publication)
	if err != nil {
		return nil, &ServerError{Err: fmt.Errorf("distribution database %s: read the published tables: %w", cfg.Distribution(), err)}
	}
	var out []TableName
	for rows.Next() {
		var t TableName
		if err := rows.Scan(&t.Schema, &t.Name); err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, rows.Err()
}

func verifyTable(ctx context.Context, pub, sub *pgx.Conn, t TableName, opts VerifyOptions) (TableVerify, error) {
	tv := TableVerify{Table: t.String()}
	ti, ok, err := describeTable(ctx, pub, t)
	if err != nil {
		return tv, &ServerError{Err: fmt.Errorf("publisher: %w", err)}
	}
	if !ok {
		return tv, &UsageError{Err: fmt.Errorf("table %s does not exist on the publisher", t)}
	}
	if len(ti.Key) == 0 {
		return tv, &UsageError{Err: fmt.Errorf("table %s has no primary key", t)}
	}
	var has bool
	if err := sub.QueryRow(ctx, "SELECT to_regclass($1) IS NOT NULL", t.Quoted()).Scan(&has); err != nil {
		return tv, &ServerError{Err: fmt.Errorf("subscriber: %w", err)}
	}
	row := "ROW(" + quoteList(ti.copyColumns()) + ")::text"
	sumSQL := "SELECT count(*), coalesce(sum(('x' || left(md5(" + row + "), 16))::bit(64)::bigint::numeric), 0)::text FROM " + t.Quoted()
	if err := pub.QueryRow(ctx, sumSQL).Scan(&tv.PublisherRows, &tv.PublisherChecksum); err != nil {
		return tv, &ServerError{Err: fmt.Errorf("publisher: checksum %s: %w", t, err)}
	}
	if !has {
		tv.SubscriberChecksum = "(no table)"
		tv.Differences = []Difference{{Key: "(table)", What: "missing on the subscriber"}}
		return tv, nil
	}
	if err := sub.QueryRow(ctx, sumSQL).Scan(&tv.SubscriberRows, &tv.SubscriberChecksum); err != nil {
		return tv, &ServerError{Err: fmt.Errorf("subscriber: checksum %s: %w", t, err)}
	}
	tv.Equal = tv.PublisherRows == tv.SubscriberRows && tv.PublisherChecksum == tv.SubscriberChecksum
	if tv.Equal {
		return tv, nil
	}
	diffs, err := firstDifferences(ctx, pub, sub, ti, row, opts.MaxDifferences)
	if err != nil {
		return tv, err
	}
	tv.Differences = diffs
	return tv, nil
}

// firstDifferences merges both sides ordered by key (the key's text form in
// byte order, the same on both servers) and lists the first differences.
func firstDifferences(ctx context.Context, pub, sub *pgx.Conn, ti *tableInfo, row string, limit int) ([]Difference, error) {
	var keys, order []string
	for _, k := range ti.Key {
		keys = append(keys, quoteIdent(k)+"::text")
		order = append(order, quoteIdent(k)+"::text COLLATE \"C\"")
	}
	sql := "SELECT ARRAY[" + strings.Join(keys, ", ") + "], md5(" + row + ") FROM " + ti.Name.Quoted() + " ORDER BY " + strings.Join(order, ", ")
	pr, err := pub.Query(ctx, sql)
	if err != nil {
		return nil, &ServerError{Err: fmt.Errorf("publisher: read %s: %w", ti.Name, err)}
	}
	defer pr.Close()
	sr, err := sub.Query(ctx, sql)
	if err != nil {
		return nil, &ServerError{Err: fmt.Errorf("subscriber: read %s: %w", ti.Name, err)}
	}
	defer sr.Close()
	type entry struct {
		key  []string
		hash string
		ok   bool
	}
	next := func(r pgx.Rows) (entry, error) {
		var e entry
		if !r.Next() {
			return e, r.Err()
		}
		err := r.Scan(&e.key, &e.hash)
		e.ok = err == nil
		return e, err
	}
	keyText := func(k []string) string {
		return "(" + strings.Join(ti.Key, ", ") + ")=(" + strings.Join(k, ", ") + ")"
	}
	cmp := func(a, b []string) int {
		for i := range a {
			if c := strings.Compare(a[i], b[i]); c != 0 {
				return c
			}
		}
		return 0
	}
	var out []Difference
	p, err1 := next(pr)
	s, err2 := next(sr)
	for (p.ok || s.ok) && len(out) < limit {
		if err := errors.Join(err1, err2); err != nil {
			return nil, &ServerError{Err: fmt.Errorf("compare %s: %w", ti.Name, err)}
		}
		switch {
		case !s.ok || (p.ok && cmp(p.key, s.key) < 0):
			out = append(out, Difference{Key: keyText(p.key), What: "missing on the subscriber"})
			p, err1 = next(pr)
		case !p.ok || cmp(p.key, s.key) > 0:
			out = append(out, Difference{Key: keyText(s.key), What: "only on the subscriber"})
			s, err2 = next(sr)
		default:
			if p.hash != s.hash {
				out = append(out, Difference{Key: keyText(p.key), What: "differs"})
			}
			p, err1 = next(pr)
			s, err2 = next(sr)
		}
	}
	if err := errors.Join(err1, err2); err != nil {
		return nil, &ServerError{Err: fmt.Errorf("compare %s: %w", ti.Name, err)}
	}
	return out, nil
}
