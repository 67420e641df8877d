package oltp

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
)

// stmt is one of the workload's prepared statements.
type stmt int

const (
	sBegin stmt = iota
	sCommit
	sBrowse     // a page of a category, by id
	sSearch     // items whose name is in [lo, hi): a prefix search
	sView       // an item and its stock
	sStockOf    // an item's stock
	sCartAdd    // put an item in a cart, or add to its quantity (the engine's upsert)
	sCartLines  // a cart's lines, in item order
	sPrice      // an item's price
	sTakeStock  // take from an item's stock, restocking as TPC-C does
	sInsertOrd  // a new order (returning its id where the engine can)
	sInsertLine // an order line
	sCharge     // charge a customer
	sEmptyCart  // empty a cart
	sBalance    // a customer's balance by primary key: pgbench -S's query
	sReport     // revenue, units and buyers per category over every order line
	numStmts
)

// statements are the workload's SQL with "?" for parameters; the
// PostgreSQL session numbers them ($1, $2 ...). Where the engines differ,
// the entry is a per-engine choice (see sqlFor).
var statements = [numStmts]string{
	sBegin:     "BEGIN",
	sCommit:    "COMMIT",
	sBrowse:    "SELECT id, name, price FROM items WHERE category = ? ORDER BY id LIMIT 20 OFFSET ?",
	sSearch:    "SELECT id, name, price FROM items WHERE name >= ? AND name < ? ORDER BY name LIMIT 20",
	sView:      "SELECT i.name, i.description, i.price, s.quantity FROM items i JOIN stock s ON s.item_id = i.id WHERE i.id = ?",
	sStockOf:   "SELECT quantity FROM stock WHERE item_id = ?",
	sCartLines: "SELECT item_id, quantity FROM carts WHERE customer_id = ? ORDER BY item_id",
	sPrice:     "SELECT price FROM items WHERE id = ?",
	// TPC-C's rule keeps stock from running out in a run of any length:
	// an item whose stock would fall below 10 is restocked by 91.
	sTakeStock: "UPDATE stock SET quantity = CASE WHEN quantity >= ? + 10 THEN quantity - ? ELSE quantity - ? + 91 END, " +
		"sold = sold + ?, updated = CURRENT_TIMESTAMP WHERE item_id = ?",
	sInsertLine: "INSERT INTO order_lines (order_id, line, item_id, quantity, price) VALUES (?, ?, ?, ?, ?)",
	sCharge:     "UPDATE customers SET balance = balance - ? WHERE id = ?",
	sEmptyCart:  "DELETE FROM carts WHERE customer_id = ?",
	sBalance:    "SELECT balance FROM customers WHERE id = ?",
	// Every order line joined to its order, item and customer, grouped by
	// category: a scan of the largest tables and a result of a row per
	// category, the shape of a report run beside the shop.
	sReport: "SELECT i.category, count(*), sum(l.quantity), sum(l.quantity * l.price), count(DISTINCT o.customer_id), " +
		"max(c.created) FROM order_lines l JOIN orders o ON o.id = l.order_id JOIN items i ON i.id = l.item_id " +
		"JOIN customers c ON c.id = o.customer_id GROUP BY i.category ORDER BY i.category",
}

// sqlFor is a statement's SQL in an engine's dialect, with "?" for
// parameters.
func sqlFor(engineName string, s stmt) string {
	switch s {
	case sCartAdd:
		if engineName == "mariadb" {
			return "INSERT INTO carts (customer_id, item_id, quantity, added) VALUES (?, ?, ?, CURRENT_TIMESTAMP) " +
				"ON DUPLICATE KEY UPDATE quantity = quantity + VALUES(quantity), added = VALUES(added)"
		}
		return "INSERT INTO carts (customer_id, item_id, quantity, added) VALUES (?, ?, ?, CURRENT_TIMESTAMP) " +
			"ON CONFLICT (customer_id, item_id) DO UPDATE SET quantity = carts.quantity + excluded.quantity, added = excluded.added"
	case sInsertOrd:
		q := "INSERT INTO orders (customer_id, placed, total, line_count) VALUES (?, CURRENT_TIMESTAMP, ?, ?)"
		if engineName == "mariadb" {
			return q // the id comes back in the OK packet
		}
		return q + " RETURNING id"
	}
	return statements[s]
}

// numbered writes "?" parameters as $1, $2 ... for PostgreSQL.
func numbered(q string) string {
	var b strings.Builder
	n := 0
	for _, r := range q {
		if r == '?' {
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// argKind is how a parameter is written.
type argKind uint8

const (
	intArg   argKind = iota
	centsArg         // an amount in cents, written as a decimal: 12345 is 123.45
	textArg
)

type arg struct {
	kind argKind
	i    int64
	s    string
}

// args are a statement's parameters; kept in the worker and reused, so
// the hot path does not allocate them.
type args struct {
	n int
	v [5]arg
}

func (a *args) set(vals ...arg) *args {
	a.n = copy(a.v[:], vals)
	return a
}

func num(i int64) arg   { return arg{kind: intArg, i: i} }
func cents(c int64) arg { return arg{kind: centsArg, i: c} }
func text(s string) arg { return arg{kind: textArg, s: s} }

// session is one connection with the workload's statements prepared, in
// an engine's own driver.
type session interface {
	// query runs a statement that returns rows and passes each row's
	// columns as text to row (nil: the rows are only counted). The
	// columns are valid only during the call.
	query(ctx context.Context, s stmt, a *args, row func(cols [][]byte) error) (rows int, err error)
	// exec runs a statement that returns no rows and returns the rows it
	// changed.
	exec(ctx context.Context, s stmt, a *args) (changed int64, err error)
	// insertOrder runs sInsertOrd and returns the new order's id.
	insertOrder(ctx context.Context, a *args) (int64, error)
	// rollback ends a transaction an error interrupted, if the connection
	// still works.
	rollback()
	close() error
}

// errNotFound is a read that found no row where the data has one: the data
// is not what this workload made.
var errNotFound = errors.New("not found")

// shopper is one virtual user's state between transactions: who is
// shopping, and the random choices.
type shopper struct {
	sizes    Sizes
	items    itemPicker
	rng      *rand.Rand
	customer int64
	a        args
	lines    []orderLine
}

func newShopper(sizes Sizes, seed uint64, id int) *shopper {
	sh := &shopper{sizes: sizes, items: newItemPicker(sizes.Items), rng: rand.New(rand.NewPCG(seed, uint64(id)+1<<32))}
	sh.nextCustomer()
	return sh
}

// nextCustomer starts another customer's visit.
func (sh *shopper) nextCustomer() { sh.customer = 1 + sh.rng.Int64N(sh.sizes.Customers) }

// run runs one transaction of type t.
func (sh *shopper) run(ctx context.Context, s session, t txType) error {
	switch t {
	case pointSelect:
		n, err := s.query(ctx, sBalance, sh.a.set(num(1+sh.rng.Int64N(sh.sizes.Customers))), nil)
		return found(n, err, "customer")
	case browse:
		category := 1 + sh.rng.Int64N(sh.sizes.Categories)
		_, err := s.query(ctx, sBrowse, sh.a.set(num(category), num(20*sh.rng.Int64N(5))), nil)
		return err
	case search:
		lo := adjectives[sh.rng.IntN(len(adjectives))][:3]
		hi := lo[:2] + string(lo[2]+1)
		_, err := s.query(ctx, sSearch, sh.a.set(text(lo), text(hi)), nil)
		return err
	case viewProduct:
		n, err := s.query(ctx, sView, sh.a.set(num(sh.items.pick(sh.rng))), nil)
		return found(n, err, "item")
	case addToCart:
		return sh.addToCart(ctx, s)
	case placeOrder:
		return sh.placeOrder(ctx, s)
	case salesReport:
		n, err := s.query(ctx, sReport, sh.a.set(), nil)
		return found(n, err, "sales of any category")
	}
	return fmt.Errorf("no transaction type %d", t)
}

func found(n int, err error, what string) error {
	if err == nil && n == 0 {
		return fmt.Errorf("%s %w", what, errNotFound)
	}
	return err
}

// inTx runs body inside a transaction, rolling back when it fails.
func inTx(ctx context.Context, s session, body func() error) error {
	if _, err := s.exec(ctx, sBegin, nil); err != nil {
		return err
	}
	if err := body(); err != nil {
		s.rollback()
		return err
	}
	if _, err := s.exec(ctx, sCommit, nil); err != nil {
		s.rollback()
		return err
	}
	return nil
}

// addToCart checks that an item is in stock and puts it in the cart.
func (sh *shopper) addToCart(ctx context.Context, s session) error {
	item, qty := sh.items.pick(sh.rng), 1+sh.rng.Int64N(3)
	return inTx(ctx, s, func() error {
		n, err := s.query(ctx, sStockOf, sh.a.set(num(item)), nil)
		if err := found(n, err, "stock of item"); err != nil {
			return err
		}
		_, err = s.exec(ctx, sCartAdd, sh.a.set(num(sh.customer), num(item), num(qty)))
		return err
	})
}

// placeOrder turns the customer's cart (or, when it is empty, one to five
// items bought at once) into an order: for each line, in item order, the
// price is read and the stock taken (the rows of popular items are where
// concurrent orders wait for each other); then the order and its lines
// are written, the customer charged and the cart emptied, all in one
// transaction. The next transaction is another customer's.
func (sh *shopper) placeOrder(ctx context.Context, s session) error {
	defer sh.nextCustomer()
	return inTx(ctx, s, func() error {
		sh.lines = sh.lines[:0]
		var bad error
		_, err := s.query(ctx, sCartLines, sh.a.set(num(sh.customer)), func(cols [][]byte) error {
			item, err1 := strconv.ParseInt(string(cols[0]), 10, 64)
			qty, err2 := strconv.ParseInt(string(cols[1]), 10, 64)
			if err1 != nil || err2 != nil {
				bad = fmt.Errorf("a cart line reads (%q, %q)", cols[0], cols[1])
			}
			sh.lines = append(sh.lines, orderLine{item: item, quantity: qty})
			return bad
		})
		if err != nil {
			return err
		}
		fromCart := len(sh.lines) > 0
		if !fromCart {
			for _, item := range sh.items.distinct(sh.rng, 1+sh.rng.IntN(5)) {
				sh.lines = append(sh.lines, orderLine{item: item, quantity: 1 + sh.rng.Int64N(3)})
			}
		}
		var total int64
		for i := range sh.lines {
			l := &sh.lines[i]
			n, err := s.query(ctx, sPrice, sh.a.set(num(l.item)), func(cols [][]byte) error {
				var perr error
				l.price, perr = parseCents(cols[0])
				return perr
			})
			if err := found(n, err, "price of item"); err != nil {
				return err
			}
			q := l.quantity
			changed, err := s.exec(ctx, sTakeStock, sh.a.set(num(q), num(q), num(q), num(q), num(l.item)))
			if err != nil {
				return err
			}
			if changed != 1 {
				return fmt.Errorf("stock of item %d %w", l.item, errNotFound)
			}
			total += q * l.price
		}
		id, err := s.insertOrder(ctx, sh.a.set(num(sh.customer), cents(total), num(int64(len(sh.lines)))))
		if err != nil {
			return err
		}
		for i, l := range sh.lines {
			if _, err := s.exec(ctx, sInsertLine, sh.a.set(num(id), num(int64(i+1)), num(l.item), num(l.quantity), cents(l.price))); err != nil {
				return err
			}
		}
		if _, err := s.exec(ctx, sCharge, sh.a.set(cents(total), num(sh.customer))); err != nil {
			return err
		}
		if fromCart {
			if _, err := s.exec(ctx, sEmptyCart, sh.a.set(num(sh.customer))); err != nil {
				return err
			}
		}
		return nil
	})
}

// parseCents reads a decimal amount ("123.45", "7.5", "12") as cents.
func parseCents(b []byte) (int64, error) {
	s := string(b)
	whole, frac, _ := strings.Cut(s, ".")
	w, err := strconv.ParseInt(whole, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("amount %q: %w", s, err)
	}
	frac = (frac + "00")[:2]
	f, err := strconv.ParseInt(frac, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("amount %q: %w", s, err)
	}
	if strings.HasPrefix(whole, "-") {
		return w*100 - f, nil
	}
	return w*100 + f, nil
}
