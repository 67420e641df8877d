// Package transportoltp is the transport-oltp study of seed 001: an
// e-commerce OLTP load under 10 to 150 virtual users on a unix socket,
// loopback TCP and emulated Gigabit, 10 Gigabit and Infiniband links, to
// tell what a thinner network stack gains from what a faster wire does.
//
// Its file, transport-oltp.toml, publishes six findings, which judges.go
// decides from the users curves of studies/loadoltp ([loadoltp.Curves]):
// thin-stack-gain (the unix socket's peak over Gigabit Ethernet's, the
// seed's +37.5 %), cpu-not-wire (the stack's CPU, not the wire, sets the
// peak), lookups-gain-more (simple lookups gain more than a report),
// peak-at-saturation, ethernet-clean and thin-stack-failures. Its report
// sections are every oltp run's: studies/loadoltp draws them.
package transportoltp
