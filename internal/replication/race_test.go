//go:build race

package replication

// raceEnabled: the race detector slows the agents several times; the fault
// tests stream fewer rows under it.
const raceEnabled = true
