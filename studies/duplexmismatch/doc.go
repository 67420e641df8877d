// Package duplexmismatch is the duplex-mismatch study of seed 002: OLTP
// and a reporting query on a link whose ends disagree on duplex (the
// server's NIC at half, the client's at full), beside the same link at
// full duplex.
//
// Its file, duplex-mismatch.toml, publishes five findings, which judges.go
// decides from the duplex pairs of studies/loadoltp
// ([loadoltp.DuplexPairs]), each OLTP mix on its own, merged
// ([study.MergeFindings]): collapse (throughput falls to a fraction),
// mean-mildly-worse (the mean at a given load only 1.3 to 1.7 times),
// outliers (transactions stalled 200 ms and more, a few over 1 s),
// server-idle (the mismatched server's CPU falls with its throughput) and
// reporting-unaffected (a large report barely notices). Its report
// sections, the mismatch beside full duplex and the stalls, are every
// oltp run's: studies/loadoltp draws them.
package duplexmismatch
