package script

import (
	"context"
	"testing"
)

// TestAllocsPerTransaction counts what a transaction allocates on the hot
// path, select-only and tpcb-like under the prepared protocol: dbrig's
// code nothing, pgconn one command tag per statement. What it counts is
// this process's allocations: the server (the package's shared one, a
// process of its own) adds none, and the test does not run in parallel
// with another.
func TestAllocsPerTransaction(t *testing.T) {
	login := pgbenchDatabase(t)
	for name, statements := range map[string]float64{"select-only": 1, "tpcb-like": 7} {
		src, _ := ParseFiles(name, nil)
		prog, err := Parse(src, Options{Protocol: Prepared})
		if err != nil {
			t.Fatal(err)
		}
		lw := &loadWorkload{prog: prog, login: login, scale: 1, seed: 1, users: 1, maxTries: 1, clock: &window{}}
		w, err := lw.NewWorker(t.Context(), 0)
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		a := testing.AllocsPerRun(200, func() {
			if err := w.Do(ctx, 0); err != nil {
				t.Fatal(err)
			}
		})
		if a > statements {
			t.Errorf("%s: %.1f allocations per transaction, want at most one per statement (%v)", name, a, statements)
		}
		w.Close()
	}
}
