package engine

import "context"

// Activity is what a server's client sessions are doing at one moment.
type Activity struct {
	// Sessions are the clients' sessions (the reading one aside); Active
	// those running a statement; Waiting those of the active that wait
	// (on a lock, I/O, the client ...); IdleInTx those idle inside a
	// transaction, where the engine tells.
	Sessions, Active, Waiting, IdleInTx int
	// Waits count active sessions by what they wait on, in the engine's
	// own words.
	Waits map[string]int
}

// AddWait counts n sessions waiting on what.
func (a *Activity) AddWait(what string, n int) {
	if a.Waits == nil {
		a.Waits = map[string]int{}
	}
	a.Waits[what] += n
}

// ActivityReader is an optional ability of an Engine: reading what its
// server's client sessions do, for the monitor that samples a server
// beside a run.
type ActivityReader interface {
	// ReadActivity counts the server's client sessions through s, one of
	// the engine's sessions, leaving s out.
	ReadActivity(ctx context.Context, s Session) (Activity, error)
	// MonitorVia says how the monitoring login c (an instance's
	// Monitored.MonitorLogin) still connects when a workload has taken
	// every ordinary connection slot.
	MonitorVia(c Conn) string
}
