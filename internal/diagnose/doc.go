// Package diagnose reads a run's latency distributions and flags the
// signature of retransmission stalls: a cluster of outliers from 200 ms on
// (TCP's minimum retransmission timeout), further clusters at whole
// multiples of it (a transaction hit twice, a retransmission lost too),
// while the median is a few milliseconds. Seed 002 met it as a duplex
// mismatch: about 800 transactions a second where more than 5,000 were
// expected, a mean only a little worse, and transactions of over 200 ms and
// over 1,000 ms.
//
// [DetectWith] judges one distribution (an HDR histogram) with what the
// point recorded beside it ([Evidence]: the users, the slowest transaction
// of each second), so that one pause of the whole machine, which stalls
// every user's transaction at once, is not taken for repeated timeouts.
// [Run] diagnoses every point of a run directory from results.jsonl alone
// (a study's run, a `dbrig load` run, a run against your own server);
// `dbrig diagnose` prints it. The rules and their thresholds are constants
// in signature.go, each with its reason; every answer says which rule
// decided it.
package diagnose
