// Package loadoltp is the report of every run of the oltp workload: `dbrig
// load oltp`'s (whose run directory is the study "load-oltp", of one
// instance), transport-oltp's, duplex-mismatch's and a user's own study of
// the workload. It has no study file and judges no finding: [Study]
// registers its sections for the workload, so that the load's report and
// both studies' reports are drawn by one package and each study package
// holds only its own judges.
//
// report.go writes each transaction type's throughput and response-time
// percentiles at every combination and each combination's seconds;
// report_curves.go the users charts with the closed-loop model and its
// knee, each curve's peak (seed 001's top-4 rule) with its gain over
// lan-1g, each mismatched point beside its full-duplex twin (seed 002) and
// the retransmission stalls package diagnose finds. The analysis the
// sections share with the judges is exported: the users curves ([Curves],
// curves.go) and the duplex pairs ([DuplexPairs], duplex.go). The model
// and its stored figures are the workload's (internal/workload/oltp).
package loadoltp
