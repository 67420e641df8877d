package tenants

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/dbrig/dbrig/internal/engine"
	"github.com/dbrig/dbrig/internal/engine/postgres/pgtest"
)

func TestSplitGivesEveryFamilyItsShare(t *testing.T) {
	for _, tc := range []struct {
		n    int
		want string
	}{
		{6, "[1 1 1 1 1 1]"},
		{200, "[59 40 30 40 20 11]"},
		{12, "[3 2 2 2 2 1]"},
		{1000, "[299 200 150 200 100 51]"},
	} {
		got := split(tc.n)
		sum := 0
		for _, c := range got {
			sum += c
		}
		if sum != tc.n || fmt.Sprint(got) != tc.want {
			t.Errorf("split(%d) = %v (sum %d), want %s", tc.n, got, sum, tc.want)
		}
	}
}

func TestEveryFunctionHasItsOwnText(t *testing.T) {
	for name, one := range map[string]func(family, int) string{"postgres": postgresFunction, "mariadb": mariadbProcedure} {
		fs := functions(200, one)
		seen := map[string]bool{}
		for _, f := range fs {
			// The body without the name: no two functions share one.
			body := f[strings.IndexByte(f, '('):]
			if seen[body] {
				t.Errorf("%s: two functions share the body %q", name, body)
			}
			seen[body] = true
		}
		if len(fs) != 200 {
			t.Errorf("%s: %d functions", name, len(fs))
		}
	}
	if pgCallText(families[3], 7) != "SELECT post_007($1, $2, $3)" || mariaCallText(families[5], 12) != "CALL pay_012(?, ?)" {
		t.Errorf("calls: %q %q", pgCallText(families[3], 7), mariaCallText(families[5], 12))
	}
}

func TestCallerCoversEveryFunctionOfAFamily(t *testing.T) {
	c := newCaller(3, split(200), 1000, pgCallText)
	seen := map[string]bool{}
	var a engine.Args
	for range 40 {
		text, args := c.pick(1, &a) // statement: 40 functions
		seen[text] = true
		if args.Len() != 1 {
			t.Fatalf("%d args", args.Len())
		}
	}
	if len(seen) != 40 {
		t.Errorf("40 statement transactions called %d of its 40 functions", len(seen))
	}
	for range 100 {
		_, args := c.pick(3, &a) // post: debit and credit differ
		if args.At(0).I == args.At(1).I {
			t.Fatalf("a journal entry to and from account %v", args.At(0).I)
		}
	}
	if n := len(c.everyCall()); n != 200 {
		t.Errorf("priming calls %d functions", n)
	}
}

// TestSeededSizeIsCloseToTheTarget keeps the bytes per row honest: a ledger
// of 4 MB of data is within a quarter of 4 MB on PostgreSQL.
func TestSeededSizeIsCloseToTheTarget(t *testing.T) {
	inst := pgtest.Start(t, "db", nil)
	ctx := ctxFor(t, 2*time.Minute)
	if err := inst.Exec(ctx, "postgres", "CREATE DATABASE sized"); err != nil {
		t.Fatal(err)
	}
	const target = 4_000_000
	if err := inst.Exec(ctx, "sized", postgresTables(target)...); err != nil {
		t.Fatal(err)
	}
	conn, err := inst.Connect(ctx, "sized")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var journal, invoices int64
	conn.QueryRow(ctx, "SELECT pg_total_relation_size('journal'), pg_total_relation_size('invoices')").Scan(&journal, &invoices)
	if got := journal + invoices; got < target*3/4 || got > target*5/4 {
		t.Errorf("journal %d + invoices %d = %d bytes, want about %d", journal, invoices, got, target)
	}
}
