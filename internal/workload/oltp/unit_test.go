package oltp

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

func TestParseMix(t *testing.T) {
	for _, tc := range []struct {
		in, want, err string
	}{
		{in: "shop", want: "browse=30 search=20 view-product=35 add-to-cart=10 place-order=5"},
		{in: "point-select", want: "point-select=1"},
		{in: "place-order=1, view-product=9", want: "view-product=9 place-order=1"},
		{in: "browse=0,search=2", want: "search=2"},
		{in: "checkout", err: "want one of shop, point-select"},
		{in: "browse=x", err: "the weight of browse"},
		{in: "browse=1,browse=2", err: "given twice"},
		{in: "refund=1", err: `no transaction type "refund"`},
		{in: "browse=0", err: "every weight is 0"},
	} {
		m, err := ParseMix(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ParseMix(%q) = %v, want an error saying %q", tc.in, err, tc.err)
			}
			continue
		}
		var got []string
		for _, w := range m.TxTypes() {
			got = append(got, fmt.Sprintf("%s=%d", w.Name, w.Weight))
		}
		if err != nil || strings.Join(got, " ") != tc.want {
			t.Errorf("ParseMix(%q) = %v, %v; want %s", tc.in, got, err, tc.want)
		}
	}
}

func TestGeneratorIsDeterministicAndSized(t *testing.T) {
	sizes := SizesAt(0.01)
	if sizes != (Sizes{Customers: 1000, Items: 100, Categories: 1, Orders: 100}) {
		t.Errorf("sizes at 0.01: %+v", sizes)
	}
	if s := SizesAt(1); s.Customers != 100_000 || s.Items != 10_000 || s.Categories != 100 || s.Orders != 10_000 {
		t.Errorf("sizes at 1: %+v", s)
	}
	for _, table := range Tables {
		var a, b bytes.Buffer
		if err := newGenerator(sizes).write(table, &a); err != nil {
			t.Fatal(err)
		}
		if err := newGenerator(sizes).write(table, &b); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(a.Bytes(), b.Bytes()) {
			t.Errorf("%s: two generations differ", table)
		}
		lines := strings.Split(strings.TrimSuffix(a.String(), "\n"), "\n")
		want := map[string]int{"items": 100, "stock": 100, "customers": 1000, "orders": 100, "carts": 0}[table]
		if table == "order_lines" {
			if len(lines) < 100 || len(lines) > 500 {
				t.Errorf("order_lines: %d lines for 100 orders of 1 to 5", len(lines))
			}
		} else if table == "carts" {
			if a.Len() != 0 {
				t.Errorf("carts are not empty")
			}
		} else if len(lines) != want {
			t.Errorf("%s: %d lines, want %d", table, len(lines), want)
		}
		if strings.ContainsAny(a.String(), "\\\r") {
			t.Errorf("%s holds a character the text formats escape", table)
		}
	}
	var items bytes.Buffer
	_ = newGenerator(sizes).write("items", &items)
	first := strings.Split(strings.Split(items.String(), "\n")[0], "\t")
	if len(first) != 5 || first[0] != "1" || !strings.Contains(first[4], ".") {
		t.Errorf("first item %q", first)
	}
}

func TestItemPickerIsSkewedAndSorted(t *testing.T) {
	p := newItemPicker(10_000)
	rng := rand.New(rand.NewPCG(1, 2))
	counts := map[int64]int{}
	for range 100_000 {
		i := p.pick(rng)
		if i < 1 || i > 10_000 {
			t.Fatalf("item %d out of range", i)
		}
		counts[i]++
	}
	most := 0
	for _, c := range counts {
		most = max(most, c)
	}
	if most < 50 { // uniform would give 10 per item
		t.Errorf("the most picked item was picked %d times in 100,000: not skewed", most)
	}
	d := p.distinct(rng, 5)
	for i := 1; i < len(d); i++ {
		if d[i] <= d[i-1] {
			t.Errorf("distinct items %v are not sorted and distinct", d)
		}
	}
	if got := newItemPicker(3).distinct(rng, 5); len(got) != 3 {
		t.Errorf("5 distinct of 3 items: %v", got)
	}
}

func TestSQLHelpers(t *testing.T) {
	if got := numbered("SELECT a FROM t WHERE x = ? AND y < ?"); got != "SELECT a FROM t WHERE x = $1 AND y < $2" {
		t.Errorf("numbered: %q", got)
	}
	for in, want := range map[string]int64{"123.45": 12345, "7.5": 750, "12": 1200, "-3.05": -305, "0.01": 1} {
		if got, err := parseCents([]byte(in)); err != nil || got != want {
			t.Errorf("parseCents(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	if _, err := parseCents([]byte("abc")); err == nil {
		t.Error("parseCents(abc) did not fail")
	}
	for cents, want := range map[int64]string{12345: "123.45", 5: "0.05", 100: "1.00", -250: "-2.50"} {
		if got := string(appendCents(nil, cents)); got != want {
			t.Errorf("appendCents(%d) = %q, want %q", cents, got, want)
		}
	}
	if !strings.Contains(sqlFor("mariadb", sCartAdd), "ON DUPLICATE KEY") || !strings.Contains(sqlFor("postgres", sInsertOrd), "RETURNING id") {
		t.Error("the dialects' statements are mixed up")
	}
}
