package load

import "context"

// TxType is one transaction type of a workload's mix.
type TxType struct {
	Name   string // as results and metrics show it: "new-order", "point-select"
	Weight int    // relative frequency; the layer picks each operation's type by weight
}

// Workload is what a load-driven workload gives the layer: its transaction
// mix and a way to make one [Worker] per virtual user.
type Workload interface {
	// Mix lists the transaction types. Worker.Do receives an index into it.
	Mix() []TxType
	// NewWorker prepares what one virtual user needs, typically its own
	// connection and prepared statements. id runs from 0 to Users-1. The
	// layer calls it for every user before the run's clock starts, so
	// connecting is not measured.
	NewWorker(ctx context.Context, id int) (Worker, error)
}

// Worker runs the operations of one virtual user. The layer calls Do from
// one goroutine at a time per worker, so a worker needs no locking.
type Worker interface {
	// Do runs one transaction of type Mix()[tx]. It must return soon after
	// ctx is done: that is how the layer enforces the hard deadline. A worker
	// that loses its connection may reconnect in a later call; the error it
	// returns is classified and counted either way.
	Do(ctx context.Context, tx int) error
	// Close releases the worker. The layer calls it exactly once for every
	// worker NewWorker returned, on every path out of a run.
	Close() error
}

// ErrorClassifier is implemented by a [Workload] whose errors the default
// [ClassifyError] would not understand.
type ErrorClassifier interface {
	ClassifyError(err error) ErrorClass
}
