package tpch

import (
	"embed"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// The 22 queries in each engine's dialect, with the specification's
// validation values as substitution parameters (clause 2.4 of TPC-H 3.0.1,
// "Query Validation" values of each query's substitution parameters), and
// the schema.
//
//go:embed queries schema sql
var sqlFiles embed.FS

// NumQueries is the number of TPC-H queries.
const NumQueries = 22

// Query is one query of the stream.
type Query struct {
	N   int    // 1 ... 22
	SQL string // ready to run at the scale factor
}

// Name is "Q1" ... "Q22".
func (q Query) Name() string { return "Q" + strconv.Itoa(q.N) }

// MetricName is the query's metric: q01_ms ... q22_ms (zero-padded so that
// metrics sort in query order).
func MetricName(n int) string { return fmt.Sprintf("q%02d_ms", n) }

// Queries returns the selected queries in the dialect of an engine, with
// the substitution parameters that depend on the scale factor set (Q11's
// FRACTION is 0.0001 / SF).
func Queries(engineName string, sf float64, selected []int) ([]Query, error) {
	var out []Query
	for _, n := range selected {
		b, err := sqlFiles.ReadFile(fmt.Sprintf("queries/%s/q%02d.sql", engineName, n))
		if err != nil {
			return nil, fmt.Errorf("no TPC-H query %d in %s's dialect", n, engineName)
		}
		sql := strings.ReplaceAll(string(b), "${fraction}", strconv.FormatFloat(0.0001/sf, 'g', -1, 64))
		out = append(out, Query{N: n, SQL: strings.TrimSpace(sql)})
	}
	return out, nil
}

// schemaSQL returns an engine's schema file: the tables ("") or the keys
// and indexes ("keys"), as statements.
func schemaSQL(engineName, part string) ([]string, error) {
	name := "schema/" + engineName + ".sql"
	if part != "" {
		name = "schema/" + engineName + "-" + part + ".sql"
	}
	b, err := sqlFiles.ReadFile(name)
	if err != nil {
		return nil, fmt.Errorf("no TPC-H schema for %s", engineName)
	}
	return splitStatements(string(b)), nil
}

// splitStatements cuts a file of statements at each ';' that ends a line,
// dropping comment lines.
func splitStatements(text string) []string {
	var out []string
	var cur strings.Builder
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "--") {
			continue
		}
		cur.WriteString(line)
		cur.WriteByte('\n')
		if strings.HasSuffix(strings.TrimSpace(line), ";") {
			s := strings.TrimSuffix(strings.TrimSpace(cur.String()), ";")
			if s != "" {
				out = append(out, s)
			}
			cur.Reset()
		}
	}
	if s := strings.TrimSpace(cur.String()); s != "" {
		out = append(out, s)
	}
	return out
}

// ParseSelection reads the queries parameter: "all", or a list of numbers
// and ranges such as "1,3,6" or "1-5,14".
func ParseSelection(s string) ([]int, error) {
	s = strings.TrimSpace(s)
	if s == "" || s == "all" {
		out := make([]int, NumQueries)
		for i := range out {
			out[i] = i + 1
		}
		return out, nil
	}
	seen := map[int]bool{}
	var out []int
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(strings.TrimPrefix(strings.TrimSpace(lo), "q"))
		b := a
		if err == nil && isRange {
			b, err = strconv.Atoi(strings.TrimPrefix(strings.TrimSpace(hi), "q"))
		}
		if err != nil || a < 1 || b > NumQueries || a > b {
			return nil, fmt.Errorf("queries: want \"all\" or numbers 1-%d such as \"1,3,6\" or \"1-5,14\", got %q", NumQueries, s)
		}
		for n := a; n <= b; n++ {
			if !seen[n] {
				seen[n] = true
				out = append(out, n)
			}
		}
	}
	slices.Sort(out)
	return out, nil
}
