package oltp

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/dbrig/dbrig/internal/load"
)

// A transaction type of the workload. The order is the order results list
// them in.
type txType int

const (
	browse      txType = iota // a page of a category of the catalogue
	search                    // items whose name starts with a prefix
	viewProduct               // one item with its stock
	addToCart                 // check the stock, put an item in the customer's cart
	placeOrder                // the cart becomes an order: stock taken, order and lines written, cart emptied
	pointSelect               // one customer's balance by primary key: pgbench -S's work
	salesReport               // revenue per category over every order: a reporting query
	numTxTypes
)

// txNames are the types' names in results, metrics and mixes.
var txNames = [numTxTypes]string{"browse", "search", "view-product", "add-to-cart", "place-order", "point-select", "report"}

func (t txType) String() string { return txNames[t] }

// metricName is the type's name inside metric names ("view_product").
func (t txType) metricName() string { return TxMetricName(txNames[t]) }

// TxMetricName is a transaction type's name inside metric names:
// "view_product" for view-product, as in view_product_tps.
func TxMetricName(tx string) string { return strings.ReplaceAll(tx, "-", "_") }

// txTypeNamed finds a type by name.
func txTypeNamed(name string) (txType, bool) {
	i := slices.Index(txNames[:], name)
	return txType(i), i >= 0
}

// weight is one transaction type's share of a mix.
type weight struct {
	tx     txType
	weight int
}

// Mix is a weighted set of transaction types, by name.
type Mix struct {
	Name    string
	weights []weight
}

// Mixes are the named mixes, in the order --help lists them.
var Mixes = []Mix{
	// An online shop's visitors mostly look: TPC-W's shopping mix has about
	// four pages read for each one that writes, and seed 001's @Bench
	// mixed browsing, searching and ordering the same way.
	{Name: "shop", weights: []weight{{browse, 30}, {search, 20}, {viewProduct, 35}, {addToCart, 10}, {placeOrder, 5}}},
	// One primary-key lookup per transaction, the work of pgbench -S and
	// sysbench oltp_point_select: what compares dbrig's driver with theirs.
	{Name: "point-select", weights: []weight{{pointSelect, 1}}},
	// Only the pages that read: the shop without its writes.
	{Name: "browse-only", weights: []weight{{browse, 30}, {search, 20}, {viewProduct, 35}}},
	// Only the writes, half each: contention on stock at its worst.
	{Name: "orders", weights: []weight{{addToCart, 1}, {placeOrder, 1}}},
	// A large reporting query and nothing else: seed 002's counterpart to
	// small transactions at a high frequency (few round trips, each one
	// long on the server).
	{Name: "reporting", weights: []weight{{salesReport, 1}}},
}

// MixNames lists the named mixes.
func MixNames() []string {
	var out []string
	for _, m := range Mixes {
		out = append(out, m.Name)
	}
	return out
}

// ParseMix reads a mix: a name from [Mixes], or weights written as
// "browse=30,search=20,view-product=35,add-to-cart=10,place-order=5".
func ParseMix(s string) (Mix, error) {
	s = strings.TrimSpace(s)
	for _, m := range Mixes {
		if m.Name == s {
			return m, nil
		}
	}
	if !strings.Contains(s, "=") {
		return Mix{}, fmt.Errorf("mix %q: want one of %s, or weights such as %q", s, strings.Join(MixNames(), ", "), "view-product=9,place-order=1")
	}
	m := Mix{Name: s}
	seen := map[txType]bool{}
	for _, part := range strings.Split(s, ",") {
		name, w, _ := strings.Cut(strings.TrimSpace(part), "=")
		t, ok := txTypeNamed(strings.TrimSpace(name))
		if !ok {
			return Mix{}, fmt.Errorf("mix %q: no transaction type %q (types: %s)", s, name, strings.Join(txNames[:], ", "))
		}
		n, err := strconv.Atoi(strings.TrimSpace(w))
		if err != nil || n < 0 {
			return Mix{}, fmt.Errorf("mix %q: the weight of %s is %q; want a whole number, 0 or more", s, name, w)
		}
		if seen[t] {
			return Mix{}, fmt.Errorf("mix %q: %s is given twice", s, name)
		}
		seen[t] = true
		if n > 0 {
			m.weights = append(m.weights, weight{t, n})
		}
	}
	if len(m.weights) == 0 {
		return Mix{}, fmt.Errorf("mix %q: every weight is 0", s)
	}
	slices.SortFunc(m.weights, func(a, b weight) int { return int(a.tx) - int(b.tx) })
	return m, nil
}

// TxTypes are the mix's types for the load layer, in the order Worker.Do
// receives their index.
func (m Mix) TxTypes() []load.TxType {
	out := make([]load.TxType, len(m.weights))
	for i, w := range m.weights {
		out[i] = load.TxType{Name: w.tx.String(), Weight: w.weight}
	}
	return out
}

// types lists the mix's types in the load layer's order.
func (m Mix) types() []txType {
	out := make([]txType, len(m.weights))
	for i, w := range m.weights {
		out[i] = w.tx
	}
	return out
}

// ReportOnly reports whether the mix is the reporting query alone.
func (m Mix) ReportOnly() bool { return len(m.weights) == 1 && m.weights[0].tx == salesReport }

// writes reports whether the mix changes data.
func (m Mix) writes() bool {
	for _, w := range m.weights {
		if w.tx == addToCart || w.tx == placeOrder {
			return true
		}
	}
	return false
}
