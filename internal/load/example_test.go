package load_test

import (
	"context"
	"fmt"
	"time"

	"github.com/dbrig/dbrig/internal/load"
)

// counter is a workload without a database: each operation counts.
type counter struct{}

type counterWorker struct{ n int }

func (counter) Mix() []load.TxType {
	return []load.TxType{{Name: "read", Weight: 9}, {Name: "write", Weight: 1}}
}

func (counter) NewWorker(ctx context.Context, id int) (load.Worker, error) {
	return &counterWorker{}, nil
}

func (w *counterWorker) Do(ctx context.Context, tx int) error {
	w.n++
	return nil
}

func (w *counterWorker) Close() error { return nil }

func Example() {
	r, err := load.NewRunner(load.Config{
		Users: 4,
		Ops:   10000, // or Duration: time.Minute, WarmUp: 10 * time.Second
		Seed:  1,
		OnInterval: func(iv load.Interval) {
			_ = iv.String() // a CLI prints this line every second
		},
	}, counter{})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := r.Run(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("ops:", res.Overall.Ops, "errors:", res.Overall.Errors)
	for _, t := range res.Types {
		fmt.Printf("%s: %.0f%%\n", t.Name, 100*float64(t.Ops)/float64(res.Overall.Ops))
	}
	// Output:
	// ops: 10000 errors: none
	// read: 90%
	// write: 10%
}
