package main

import (
	"encoding/json"
	"errors"

	"github.com/spf13/cobra"

	"github.com/dbrig/dbrig/internal/diagnose"
)

// errStallsFound makes the exit code 1 once the diagnosis is printed.
var errStallsFound = errors.New("")

func newDiagnoseCmd(a *app) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "diagnose RUNDIR",
		Short: "Flag retransmission stalls in a run's latency distributions",
		Long: `diagnose reads the latency distributions of every point of a run (a study's
run, a 'dbrig load' run, a run against your own server) and flags the
signature of TCP retransmission stalls, as seed 002's duplex mismatch showed
it: a cluster of transactions from 200 ms on (TCP's minimum retransmission
timeout), further clusters at whole multiples of it, while the median is a
few milliseconds. It names each point with the signature, the share of its
transactions that stalled, the transaction types hit and what the point's
emulated links lost, and for the others why not (a slow server's tail thins
out; one pause of the whole machine stalls every user once).

It reads results.jsonl alone: nothing is started or changed.

Exit codes: 0 no signature in any point, 1 a signature found, 2 bad input (a
missing or unreadable directory, not a run, no latency distribution).`,
		Example: `  dbrig diagnose runs/duplex-mismatch-20261122-101500
  dbrig diagnose runs/load-oltp-20261122-113000 --json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			d, err := diagnose.Run(args[0])
			if err != nil {
				return usageError(err)
			}
			if asJSON {
				enc := json.NewEncoder(a.stdout)
				enc.SetIndent("", "  ")
				if err := enc.Encode(d); err != nil {
					return failure(err)
				}
			} else if err := d.WriteText(a.stdout); err != nil {
				return failure(err)
			}
			if d.Found > 0 {
				return failure(errStallsFound)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the diagnosis as one JSON document")
	return cmd
}
