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
//	push (stop-and-wait): t = ((n − 1) × ⌈full buffer / W⌉
//	                          + ⌈last buffer / W⌉ − ½) × RTT + V / R
//	push-pipelined (K):   t = ½ RTT + transfer(V, min(W, K × buffer))
//	pull:                 t = 1.5 RTT + transfer(V, W)
//	native:               t = 7 RTT + transfer(V, W)
//	fdw (batch b):        t = (⌈rows / b⌉ × ⌈batch bytes / W⌉ + 4) × RTT + V / R
//	init-snapshot:        t = 6 RTT + transfer(V, W)
//	init-backup:          t = 1.5 RTT + transfer(V, W)
//
// where transfer(V, W) = max(V / R, (⌈V / W⌉ − 1) × RTT + the last window
// / R) is a stream's time on the link beyond its one-way delay: the link
// holds a window whole until its credit is back one RTT after it left.
// The round trips beside the stream are those the scenario's timed part
// pays across the link (streamRoundTrips says which). A push's n buffers
// hold whole rows (wholeRows), and its last answer is not timed (½ RTT
// less); a postgres_fdw insert starts a remote transaction, prepares its
// statement, deallocates it and commits (4 RTTs).
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
	window := float64(l.InFlightBytes())
	switch params.String("scenario") {
	case "push":
		// Each buffer is a round trip, but the rig sees the last row on the
		// subscriber once the last buffer is applied, half a round trip
		// before its answer is back.
		b := wholeRows(v, in.rows, float64(params.Int("buffer_size")))
		if window <= 0 || b.bytes <= window {
			return (b.count-0.5)*rtt + serial, fmt.Sprintf("(%s − ½) = %.1f round trips × RTT + V/rate", b.formula, b.count-0.5), true
		}
		// A buffer larger than what may be in flight crosses in several
		// round trips; the last, partial buffer in those of its own bytes.
		rtts := (b.count-1)*math.Ceil(b.bytes/window) + math.Ceil(b.last/window) - 0.5
		return rtts*rtt + serial, fmt.Sprintf("%s buffers of ⌈buffer/%.0f⌉ round trips, the last of its own bytes' and without its answer's half = %.1f round trips × RTT + V/rate", b.formula, window, rtts), true
	case "push-pipelined":
		// K buffers unanswered are a window of K × buffer; the stream's
		// first bytes cross (½ RTT), and the rig sees the last row once the
		// last buffer is applied, before its answer is back.
		k, buffer := in.pipeline, float64(params.Int("buffer_size"))
		if k > 0 && (window <= 0 || k*buffer < window) {
			window = k * buffer
		}
		s, how := transfer(v, l, window)
		return rtt/2 + s, fmt.Sprintf("½ RTT + %s (%.0f buffers in flight)", how, k), true
	case "fdw-row", "fdw-batch":
		b := math.Max(1, in.batch)
		perBatch := 1.0
		if window > 0 && in.rows > 0 {
			// A batch larger than the window waits for acknowledgements.
			perBatch = math.Ceil(b * v / in.rows / window)
		}
		// The remote transaction's START TRANSACTION, the insert's
		// PREPARE, its DEALLOCATE and COMMIT: 4 round trips beside the
		// batches'.
		trips := math.Ceil(in.rows/b)*perBatch + 4
		return trips*rtt + serial, fmt.Sprintf("(⌈rows/%g⌉ × %.0f + 4) = %.0f round trips × RTT + V/rate", b, perBatch, trips), true
	}
	trips, ok := streamRoundTrips[params.String("scenario")]
	if !ok {
		return 0, "", false
	}
	s, how := transfer(v, l, window)
	return trips*rtt + s, fmt.Sprintf("%g RTT + %s", trips, how), true
}

// buffers are the stop-and-wait writer's buffers: how many, the bytes of
// each full one and of the last.
type buffers struct {
	count, bytes, last float64
	formula            string
}

// wholeRows are the buffers that carry v bytes of rows rows: the agent
// fills a buffer with whole rows (render's room for the next one), so a
// 40 KB buffer holds 17 rows of 2.3 KB (38 KB), and 1,000 such rows take
// 59 buffers, not the 57 of V / buffer. Without rows, V / buffer.
func wholeRows(v, rows, buffer float64) buffers {
	if !(rows > 0) || !(v > 0) || v/rows > buffer {
		n := math.Ceil(v / buffer)
		return buffers{count: n, bytes: buffer, last: v - (n-1)*buffer, formula: fmt.Sprintf("⌈V/buffer⌉ = %.0f", n)}
	}
	perRow := v / rows
	perBuffer := math.Floor(buffer / perRow)
	n := math.Ceil(rows / perBuffer)
	return buffers{count: n, bytes: perBuffer * perRow, last: v - (n-1)*perBuffer*perRow,
		formula: fmt.Sprintf("⌈rows / ⌊buffer / (V/rows)⌋⌉ = ⌈%.0f / %.0f⌉ = %.0f", rows, perBuffer, n)}
}

// streamRoundTrips are the round trips across the link inside the timed
// part of the scenarios that carry their rows as one stream, beside the
// stream's own (transfer), each counted from the code and seen in the
// links' per-10-ms series of a stored run:
//   - pull: the log reader's NOTIFY crosses to the agent (½), the agent's
//     read crosses back (½) and the rows' first bytes return (½);
//   - native: the rig inserts once the subscription's apply worker exists,
//     which then connects across the link (TCP 1, startup and SCRAM 3),
//     asks 2 more round trips of the walsender, sends START_REPLICATION
//     (½), and the rows' first bytes return (½);
//   - init-snapshot: the copy's connection to the subscriber (TCP 1,
//     startup and SCRAM 3), BEGIN, CREATE SCHEMA, CREATE TABLE and the
//     COPY in one query, the rows right behind it (½), and its answer
//     (½), then the primary key, the subscription's record and COMMIT in
//     one batch (1);
//   - init-backup: pg_dump and pg_restore run at their own sites and only
//     the archive's connection crosses: its TCP handshake (1, while
//     pg_dump starts) and the archive's first bytes (½).
var streamRoundTrips = map[string]float64{"pull": 1.5, "native": 7, "init-snapshot": 6, "init-backup": 1.5}

// transfer is the time from a stream's first byte leaving to its last
// arriving, beyond the one-way delay: v bytes at the link's rate, or where
// inFlight bytes (the window, or what a writer keeps unanswered) leave
// before the first one's credit is back, a round trip for each full
// window before the last and the last at the rate. Windows are whole: a
// megabyte through 64 KiB is 15 round trips and the last 16th, not the
// 15.3 of V / (window / RTT).
func transfer(v float64, l workload.LinkResult, inFlight float64) (seconds float64, formula string) {
	atRate := 0.0
	if l.RateBitsPerS > 0 {
		atRate = v * 8 / l.RateBitsPerS
	}
	if inFlight <= 0 || v <= inFlight {
		return atRate, "V/rate"
	}
	full := math.Ceil(v/inFlight) - 1
	windowed := full * l.RTTSeconds
	if l.RateBitsPerS > 0 {
		windowed += (v - full*inFlight) * 8 / l.RateBitsPerS
	}
	if atRate >= windowed {
		return atRate, "V/rate"
	}
	return windowed, fmt.Sprintf("(⌈V/%.0f⌉ − 1) = %.0f round trips × RTT + the last window/rate", inFlight, full)
}
