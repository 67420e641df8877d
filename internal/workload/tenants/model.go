package tenants

import (
	"fmt"
	"math"

	"github.com/dbrig/dbrig/internal/workload"
)

// The model is the closed loop's: N connections, each thinking Z between
// transactions that take R, run N / (R + Z) transactions a second, until a
// resource saturates; then the resource's capacity over each transaction's
// demand on it is the ceiling (the utilization law). Here the resource is
// the CPU: the servers and dbrig's client share the host's CPUs.
//
//	TPM = min(N × 60 / (R0 + Z), 60 × C / D)
//
// Z is the think time plus how late the client's timers ended it. R0 is
// the response time without queueing: the lowest mean response any
// point of the run had so far on the same engine (the fewest connections
// come closest to it). D is the point's CPU time per transaction (servers
// and client), C the host's CPUs. Other processes' work on the same host
// is not in the model: each point records it (other_cpus), and it is what
// a measurement below the model on a shared machine is first read against.
// (Taking C as the CPUs other processes left would make the ceiling equal
// the measurement whenever they filled every idle moment, as a busy shared
// machine's do.)

// ClosedLoop is the model's two bounds for a point.
type ClosedLoop struct {
	N, R0, Z  float64 // connections, seconds, seconds
	D, C      float64 // CPU seconds per transaction, CPUs
	ThinkTPM  float64 // N × 60 / (R0 + Z)
	CPUTPM    float64 // 60 × C / D (NaN when D is unknown)
	TPM       float64 // the smaller
	Saturated bool    // the CPU bound is the smaller
}

// Resource names the bound that limits: "CPU" or "think time".
func (m ClosedLoop) Resource() string {
	if m.Saturated {
		return "CPU"
	}
	return "think time"
}

// LoopOf is the model of a result, with R0 from the results before it on
// the same engine; false when the result has no connections or response.
func LoopOf(r workload.Result, all []workload.Result) (ClosedLoop, bool) {
	n := r.Metrics["databases"]
	// The think time as the client kept it: its timers wake late on a
	// busy host, and that lateness is part of each connection's cycle.
	z := (r.Metrics["think_ms"] + r.Metrics["think_lag_ms"]) / 1000
	r0 := r.Metrics["response_ms"] / 1000
	if n <= 0 || r0 <= 0 {
		return ClosedLoop{}, false
	}
	eng := EngineOf(r)
	for _, o := range all {
		if !o.Measured() || EngineOf(o) != eng {
			continue
		}
		if v := o.Metrics["response_ms"] / 1000; v > 0 && v < r0 {
			r0 = v
		}
	}
	return closedLoop(n, r0, z, r.Metrics["cpu_ms_per_tx"]/1000, r.Metrics["host_cpus"]), true
}

// closedLoop is the model's two bounds for n connections of response r0
// and think z, the CPU's only where its demand d a transaction and its c
// CPUs are known.
func closedLoop(n, r0, z, d, c float64) ClosedLoop {
	m := ClosedLoop{N: n, R0: r0, Z: z, CPUTPM: math.NaN()}
	m.ThinkTPM = n * 60 / (r0 + z)
	m.TPM = m.ThinkTPM
	if d > 0 && c > 0 {
		m.D, m.C = d, c
		m.CPUTPM = 60 * c / d
		if m.CPUTPM < m.ThinkTPM {
			m.TPM, m.Saturated = m.CPUTPM, true
		}
	}
	return m
}

// EngineOf is the engine of the point's instances: each engine's points
// have their own R0.
func EngineOf(r workload.Result) string {
	if len(r.Instances) > 0 {
		return r.Instances[0].Engine
	}
	return ""
}

// Model predicts a point's TPM from the closed loop and the CPU's ceiling.
func Model(r workload.Result, all []workload.Result) workload.Prediction {
	m, ok := LoopOf(r, all)
	if !ok {
		return workload.Prediction{}
	}
	p := workload.Prediction{Metrics: map[string]float64{"tpm": m.TPM, "tpm_per_db": m.TPM / m.N}}
	p.Formula = fmt.Sprintf("closed loop: TPM = N × 60 / (R0 + Z) = %.0f × 60 / (%s + %s) = %.0f", m.N, Millis(m.R0), Millis(m.Z), m.ThinkTPM)
	if !math.IsNaN(m.CPUTPM) {
		p.Formula += fmt.Sprintf(" until the CPU saturates at 60 × C / D = 60 × %.2f CPUs / %s = %.0f", m.C, Millis(m.D), m.CPUTPM)
		if m.Saturated {
			p.Formula += ": the CPU is the resource that limits"
		} else {
			p.Formula += ": no resource saturates"
		}
	}
	return p
}

// Millis prints seconds as milliseconds ("2.0 ms", "1.25 ms", "310 µs"),
// as the model's formula and the study's report write them.
func Millis(s float64) string {
	switch {
	case s >= 0.01:
		return fmt.Sprintf("%.1f ms", s*1000)
	case s >= 0.001:
		return fmt.Sprintf("%.2f ms", s*1000)
	}
	return fmt.Sprintf("%.0f µs", s*1e6)
}
