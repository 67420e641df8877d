package replication

import (
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Collector publishes a supervised run and the replication's state in
// Prometheus form, for an operator's alerts: what this process's roles
// did (from the Supervisor) and where the replication stands (from the
// three databases, read at most once per StatusInterval, whichever process
// runs the roles).
type Collector struct {
	cfg      Config
	sup      *Supervisor
	interval time.Duration

	mu      sync.Mutex
	at      time.Time
	status  Status
	statErr error
}

// NewCollector watches the replication cfg names and, when sup is not
// nil, the roles it runs.
func NewCollector(cfg Config, sup *Supervisor) *Collector {
	return &Collector{cfg: cfg.withDefaults(), sup: sup, interval: time.Second}
}

func desc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc("dbrig_replication_"+name, help, append([]string{"publication"}, labels...), nil)
}

var (
	descRoleUp      = desc("role_up", "1 while the role runs in this process; 0 once it stopped (see dbrig replicate status for why).", "role")
	descApplied     = desc("commands_applied_total", "Commands (inserts, updates, deletes, truncates) the agent of this process applied.")
	descRate        = desc("commands_per_second", "Commands applied per second over the last ten seconds.")
	descStoredHere  = desc("commands_captured_total", "Commands the log reader of this process stored in the distribution database.")
	descErrors      = desc("errors_total", "Failures of this process's roles: transient ones were retried, permanent ones stopped the role.", "kind")
	descStatusUp    = desc("status_up", "1 when the last reading of the replication's state succeeded.")
	descLagSeconds  = desc("lag_seconds", "How long ago the oldest transaction not yet applied on the subscriber committed on the publisher (0 when none is pending).")
	descLagBytes    = desc("lag_bytes", "Size of the changes captured and not yet applied on the subscriber, as pgoutput messages.")
	descPending     = desc("pending_commands", "Commands stored in the distribution database and not yet applied.")
	descPendingTx   = desc("pending_transactions", "Source transactions stored and not yet applied.")
	descStored      = desc("stored_commands_total", "Commands the log reader stored since setup.")
	descSlotRetain  = desc("slot_wal_retained_bytes", "WAL the publisher keeps for the replication slot; it grows while the log reader does not run.")
	descSlotLag     = desc("slot_lag_bytes", "WAL written on the publisher since the position the log reader confirmed.")
	descAgentRun    = desc("agent_running", "1 while a distribution agent of this replication runs (anywhere).")
	descReaderRun   = desc("log_reader_running", "1 while a log reader of this replication runs (anywhere).")
	descDistributed = desc("distribution_bytes", "Size of the publication's command stream in the distribution database.")
)

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descRoleUp, descApplied, descRate, descStoredHere, descErrors, descStatusUp, descLagSeconds,
		descLagBytes, descPending, descPendingTx, descStored, descSlotRetain, descSlotLag, descAgentRun, descReaderRun, descDistributed} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	pub := c.cfg.Publication
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, append([]string{pub}, labels...)...)
	}
	counter := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, append([]string{pub}, labels...)...)
	}
	if c.sup != nil {
		p := c.sup.Progress()
		running := c.sup.running()
		if p.LogReader != nil {
			gauge(descRoleUp, b2f(running && c.sup.Err() == nil), "log_reader")
			counter(descStoredHere, float64(p.LogReader.Commands))
		}
		if p.Agent != nil {
			gauge(descRoleUp, b2f(running && p.AgentStopped == ""), "agent")
			counter(descApplied, float64(p.Applied))
			gauge(descRate, p.CommandsPerSecond)
		}
		counter(descErrors, float64(p.TransientErrors), "transient")
		counter(descErrors, float64(p.PermanentErrors), "permanent")
	}
	st, err := c.readStatus()
	gauge(descStatusUp, b2f(err == nil))
	if err != nil {
		return
	}
	gauge(descLagSeconds, st.Lag.Seconds())
	gauge(descLagBytes, float64(st.PendingBytes))
	gauge(descPending, float64(st.Pending))
	gauge(descPendingTx, float64(st.PendingTransactions))
	counter(descStored, float64(st.Stored))
	gauge(descSlotRetain, float64(st.Slot.WALRetainedBytes))
	gauge(descSlotLag, float64(st.Slot.LagBytes))
	gauge(descAgentRun, b2f(st.Agent.Running))
	gauge(descReaderRun, b2f(st.LogReader.Running))
	gauge(descDistributed, float64(st.DistributionBytes))
}

// readStatus reads the replication's state, at most once per interval.
func (c *Collector) readStatus() (Status, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if time.Since(c.at) < c.interval && !c.at.IsZero() {
		return c.status, c.statErr
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c.status, c.statErr = GetStatus(ctx, c.cfg)
	c.at = time.Now()
	return c.status, c.statErr
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// running reports whether the run has not ended.
func (s *Supervisor) running() bool {
	select {
	case <-s.done:
		return false
	default:
		return true
	}
}
