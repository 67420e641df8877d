package georep

import (
	"fmt"
	"math"

	"github.com/dbrig/dbrig/internal/workload"
)

// The models of studies/geo-replication.md, each predicting the time to
// carry a point's volume V (the bytes the link carried in the data's
// direction) across a link of round-trip time RTT, rate R and window W:
//
//	push (stop-and-wait): t = ⌊V / buffer⌋ × ⌈buffer / W⌉ × RTT
//	                          + ⌈(V mod buffer) / W⌉ × RTT + V / R
//	push-pipelined (K):   t = V / min(R, W/RTT, K × buffer / RTT) + RTT
//	pull:                 t = V / min(R, W/RTT) + RTT
//	native:               t = V / min(R, W/RTT) + 2 RTT
//	fdw (batch b):        t = (⌈rows / b⌉ × ⌈batch bytes / W⌉ + 3) × RTT + V / R
//	init-snapshot/backup: t = V / min(R, W/RTT) + 2 RTT
//
// plus, where a scenario opens connections or transactions across the
// link inside its timing, their round trips: a snapshot or a backup
// connects to the subscriber (TCP and SCRAM: 4 RTTs) and runs its
// statements (COPY, or pg_restore's catalog: about 2 RTTs more); a
// postgres_fdw insert starts, prepares and commits a remote transaction
// (3 RTTs).
//
// Model takes V as measured, so its fit tests the physics (round trips,
// window, rate), not the encoding of the rows: the SQL the agent sent
// (push), the commands it read (pull), or the bytes the link carried in
// the data's direction (the others; for push-pipelined with auto the link
// also carried the agent's bandwidth probe, which is not the rows).
// Predict (predict.go) takes V from the points before, so that the figure
// is made before the point runs.

// pointLink returns the point's link.
func pointLink(r workload.Result) workload.LinkResult {
	if len(r.Links) == 0 {
		return workload.LinkResult{}
	}
	return r.Links[0]
}

// Volume is V, the bytes of the rows that crossed the link.
func Volume(r workload.Result) float64 {
	switch r.Params.String("scenario") {
	case "push", "push-pipelined":
		return r.Metrics["sent_bytes"]
	case "pull":
		return r.Metrics["read_bytes"]
	}
	l := pointLink(r)
	return float64(max(l.ForwardBytes, l.ReverseBytes))
}

// streamRate is min(rate, window / RTT) in bits per second (+Inf when
// neither limits).
func streamRate(l workload.LinkResult) float64 {
	rate := math.Inf(1)
	if l.RateBitsPerS > 0 {
		rate = l.RateBitsPerS
	}
	if l.InFlightBytes() > 0 && l.RTTSeconds > 0 {
		rate = math.Min(rate, float64(l.InFlightBytes())*8/l.RTTSeconds)
	}
	return rate
}

// inputs are what a scenario's time takes beside its link: V, and for
// some scenarios the rows, postgres_fdw's batch and the writer's pipeline.
type inputs struct {
	volume, rows, batch, pipeline float64
}

// Model predicts a point's seconds from its volume and its link.
func Model(r workload.Result, _ []workload.Result) workload.Prediction {
	if r.Metrics == nil || len(r.Links) == 0 || pointLink(r).Mode != "link" {
		return workload.Prediction{}
	}
	m := r.Metrics
	in := inputs{volume: Volume(r), rows: m["rows"], batch: m["batch_size"], pipeline: m["pipeline"]}
	return timed(r, in)
}

// timed is the prediction of the point's seconds and rows a second for
// inputs in, by its scenario's model.
func timed(r workload.Result, in inputs) workload.Prediction {
	t, formula, ok := seconds(r.Params, pointLink(r), in)
	if !ok {
		return workload.Prediction{}
	}
	p := workload.Prediction{Metrics: map[string]float64{"seconds": t}, Formula: formula}
	if t > 0 && in.rows > 0 {
		p.Metrics["rows_per_s"] = in.rows / t
	}
	return p
}

// seconds is the time to carry in.volume across link l by the scenario
// that params name.
func seconds(params workload.Params, l workload.LinkResult, in inputs) (t float64, formula string, ok bool) {
	v, rtt := in.volume, l.RTTSeconds
	serial := 0.0
	if l.RateBitsPerS > 0 {
		serial = v * 8 / l.RateBitsPerS
	}
	switch params.String("scenario") {
	case "push":
		buffer := float64(params.Int("buffer_size"))
		trips := math.Ceil(v / buffer)
		inFlight := float64(l.InFlightBytes())
		if inFlight <= 0 || buffer <= inFlight {
			return trips*rtt + serial, fmt.Sprintf("⌈V/buffer⌉ = %.0f round trips × RTT + V/rate", trips), true
		}
		// A buffer larger than what may be in flight crosses in several
		// round trips; the last, partial buffer in those of its own bytes.
		full := math.Floor(v / buffer)
		rtts := full*math.Ceil(buffer/inFlight) + math.Ceil((v-full*buffer)/inFlight)
		return rtts*rtt + serial, fmt.Sprintf("⌈V/buffer⌉ = %.0f buffers of ⌈buffer/%.0f⌉ round trips, the last of its own bytes' = %.0f round trips × RTT + V/rate", trips, inFlight, rtts), true
	case "push-pipelined":
		k, buffer := in.pipeline, float64(params.Int("buffer_size"))
		sr := streamRate(l)
		if k > 0 && rtt > 0 {
			sr = math.Min(sr, k*buffer*8/rtt)
		}
		return v*8/sr + rtt, fmt.Sprintf("V / min(rate, window/RTT, %.0f buffers/RTT) + RTT", k), true
	case "pull":
		// The connected agent hears of new commands and reads them back
		// across the link: about one round trip before the stream flows.
		return v*8/streamRate(l) + rtt, "V / min(rate, window/RTT) + RTT", true
	case "native":
		// The subscriber's apply worker asks the publisher's WAL sender,
		// which decodes and sends: two round trips of start-up.
		return v*8/streamRate(l) + 2*rtt, "V / min(rate, window/RTT) + 2 RTT", true
	case "init-snapshot", "init-backup":
		return v*8/streamRate(l) + 6*rtt, "V / min(rate, window/RTT) + 6 RTT (connect, statements)", true
	case "fdw-row", "fdw-batch":
		b := math.Max(1, in.batch)
		perBatch := 1.0
		if l.InFlightBytes() > 0 && in.rows > 0 {
			// A batch larger than the window waits for acknowledgements.
			perBatch = math.Ceil(b * v / in.rows / float64(l.InFlightBytes()))
		}
		trips := math.Ceil(in.rows/b)*perBatch + 3
		return trips*rtt + serial, fmt.Sprintf("(⌈rows/%g⌉ × %.0f + 3) = %.0f round trips × RTT + V/rate", b, perBatch, trips), true
	}
	return 0, "", false
}
