package oltp

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/dbrig/dbrig/internal/diagnose"
	"github.com/dbrig/dbrig/internal/workload"
)

// The models beside the measurements.
//
// Closed loop (operational analysis, Little's law): N users who each wait
// R for a response and think Z between transactions complete
// X = N / (R + Z) transactions a second. At light load R is the base
// response R0, so throughput rises along N / (R0 + Z); once the server
// saturates it cannot rise above its capacity X_peak, and R grows instead.
// The two asymptotes meet at the knee, N* = X_peak × (R0 + Z): below it,
// more users bring more throughput; beyond it, only longer waits.
// R0 is the mean response at the curve's lightest load measured, X_peak
// the mean of the curve's top 4 points (seed 001's rule for the peak; the
// highest point while the curve has fewer than 4). Z is the think time as
// the users lived it there, by Little's law N0 / X0 - R0: a busy machine
// wakes a sleeping user late (1.6 ms on a think of 10 ms at load average
// 23 to 40), which the think time set leaves out, so N / (R0 + Z set)
// judged the lightest point itself saturated.
//
// Duplex mismatch (seed 002): a transaction one of whose segments
// collides waits one retransmission timeout (RTO = RTT + 200 ms) for it.
// If a share h of the transactions is hit, each user spends h × RTO more
// per transaction, so X = N / (R + Z + h × RTO), with R the full-duplex
// link's response at the same users: the stalls alone bound what the
// mismatch can cost. h is measured (the transactions in the RTO-spaced
// clusters of the point's own distribution), each charged one RTO.

// PeakPoints is how many of a curve's best points the peak averages:
// seed 001 reported "an average of the top 4 scores".
const PeakPoints = 4

// Peak is seed 001's peak throughput: the mean of the top 4 values, and
// the indices of those kept. With fewer than 4 values the rule cannot
// apply, and the highest is the best estimate of what the server gives.
func Peak(tps []float64) (float64, []int) {
	idx := make([]int, len(tps))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int {
		switch {
		case tps[a] > tps[b]:
			return -1
		case tps[a] < tps[b]:
			return 1
		}
		return 0
	})
	switch {
	case len(idx) == 0:
		return math.NaN(), nil
	case len(idx) < PeakPoints:
		idx = idx[:1]
	default:
		idx = idx[:PeakPoints]
	}
	sum := 0.0
	for _, i := range idx {
		sum += tps[i]
	}
	slices.Sort(idx)
	return sum / float64(len(idx)), idx
}

// Mismatched reports whether the point's link runs at a duplex mismatch.
func Mismatched(r workload.Result) bool { return r.Link().Duplex == "mismatch" }

// CurveKey is what a point shares with the other points of its curve:
// everything but its users (parameters, links, servers, client). noDuplex
// leaves a duplex mismatch out of the link's profile, to find a
// mismatched point's full-duplex twin.
func CurveKey(r workload.Result, noDuplex bool) string {
	p := maps.Clone(r.Params)
	delete(p, "users")
	params, _ := json.Marshal(p) // keys sorted
	var links []string
	for _, l := range r.Links {
		profile := l.Profile
		if noDuplex {
			profile = strings.ReplaceAll(profile, "+duplex-mismatch", "")
		}
		links = append(links, fmt.Sprintf("%s=%s:%s:%g:%g:%d", l.Name, l.Mode, profile, l.RTTSeconds, l.RateBitsPerS, l.InFlightBytes()))
	}
	inst, _ := json.Marshal(r.Instances)
	client, _ := json.Marshal(r.Client)
	return string(params) + "|" + strings.Join(links, ",") + "|" + string(inst) + "|" + string(client)
}

// CurvePoint is one users value of a curve, its runs averaged.
type CurvePoint struct {
	Users, TPS, MeanMS float64
	Runs               int
	// ServerCPU is the CPUs the server's processes kept busy, the runs'
	// mean of what the monitor saw (0 when it saw none).
	ServerCPU float64
	// ClientUSPerTx is the client's CPU per transaction, the runs' mean
	// (its process's: the link's proxy runs there too).
	ClientUSPerTx float64
	// LockWaits is the sessions the monitor saw waiting on a lock, the
	// runs' mean; waits on I/O, the WAL's fsync or the client are left out.
	LockWaits float64
}

// curveOf gathers the closed-loop points of all that share r's curve,
// one per users value, in users order, leaving r's own combination out:
// the model of a point is never fitted on it.
func curveOf(r workload.Result, all []workload.Result) []CurvePoint {
	key := CurveKey(r, false)
	by := map[float64]*CurvePoint{}
	for _, o := range all {
		if !o.Measured() || o.Combo == r.Combo || o.Params.Float("rate") > 0 || CurveKey(o, false) != key {
			continue
		}
		tps, okT := o.Metrics["tps"]
		mean, okM := o.Metrics["mean_ms"]
		if !okT || !okM {
			continue
		}
		u := o.Params.Float("users")
		cp := by[u]
		if cp == nil {
			cp = &CurvePoint{Users: u}
			by[u] = cp
		}
		cp.TPS = (cp.TPS*float64(cp.Runs) + tps) / float64(cp.Runs+1)
		cp.MeanMS = (cp.MeanMS*float64(cp.Runs) + mean) / float64(cp.Runs+1)
		cp.ServerCPU = (cp.ServerCPU*float64(cp.Runs) + serverCPU(o)) / float64(cp.Runs+1)
		cp.ClientUSPerTx = (cp.ClientUSPerTx*float64(cp.Runs) + o.Metrics["client_cpu_us_per_tx"]) / float64(cp.Runs+1)
		cp.LockWaits = (cp.LockWaits*float64(cp.Runs) + sessionsOnLocks(o)) / float64(cp.Runs+1)
		cp.Runs++
	}
	var out []CurvePoint
	for _, u := range slices.Sorted(maps.Keys(by)) {
		out = append(out, *by[u])
	}
	return out
}

// wholeCurveOf is the curve o belongs to, its own combination included:
// curveOf leaves out the combination of the result it is given, and this
// copy of o's keys has none.
func wholeCurveOf(o workload.Result, all []workload.Result) []CurvePoint {
	return curveOf(workload.Result{Params: o.Params, Links: o.Links, Instances: o.Instances, Client: o.Client}, all)
}

// serverCPU is the CPUs the point's servers kept busy on average, as the
// monitor saw them (0 when it saw none: a target's processes are hidden).
func serverCPU(r workload.Result) float64 {
	cpu := 0.0
	for _, s := range r.Monitor {
		if v := s.Summarize().MeanCPU; v > 0 {
			cpu += v
		}
	}
	return cpu
}

// sessionsOnLocks is the sessions the point's servers had waiting on a
// lock on average, as the monitor's samples counted them by wait.
func sessionsOnLocks(r workload.Result) float64 {
	w := 0.0
	for _, s := range r.Monitor {
		locked, taken := 0, 0
		for _, x := range s.Samples {
			if !x.OK() {
				continue
			}
			taken++
			for wait, n := range x.Waits {
				if isLockWait(wait) {
					locked += n
				}
			}
		}
		if taken > 0 {
			w += float64(locked) / float64(taken)
		}
	}
	return w
}

// isLockWait reports whether a sample's wait is on a lock: PostgreSQL's
// wait_event_type Lock (a row's transaction, a tuple, a relation), or
// MariaDB's "row lock", InnoDB's lock waits (its engine's activity.go).
// A MariaDB thread's state is left out: it says what the thread does
// (sending data, updating), not that it waits on a lock.
func isLockWait(wait string) bool {
	return strings.HasPrefix(wait, "Lock:") || wait == "row lock"
}

// ClosedLoop is the closed-loop model of one curve.
type ClosedLoop struct {
	BaseUsers  float64 // the users of the lightest load measured
	BaseMS     float64 // R0: the mean response there
	ThinkMS    float64 // Z: think and keying time per transaction
	Peak       float64 // X_peak: the mean of the top 4 points
	PeakPoints int     // how many points the peak averages
	Knee       float64 // N* = X_peak × (R0 + Z)
}

// TPS is the model's throughput at n users.
func (m ClosedLoop) TPS(n float64) float64 {
	return math.Min(n/((m.BaseMS+m.ThinkMS)/1000), m.Peak)
}

// ThinkMS is a point's mean think and keying time per transaction.
func ThinkMS(p workload.Params) float64 {
	return ms(p.Duration("think")) + ms(p.Duration("keying"))
}

// LivedThinkMS is the think time the users of a curve point lived, by
// Little's law: N users each completing X / N transactions a second spend
// N / X per cycle, of which the mean response is the server's; the rest
// is think, keying and the wake-ups after them. think (the time set, ms)
// when the point has no throughput to tell.
func LivedThinkMS(c CurvePoint, think float64) float64 {
	if c.TPS <= 0 || c.Users <= 0 {
		return think
	}
	return max(1000*c.Users/c.TPS-c.MeanMS, 0)
}

// FitClosedLoop fits the closed-loop model on a curve's points, in users
// order, with think the think and keying time per transaction (ms).
func FitClosedLoop(curve []CurvePoint, think float64) ClosedLoop {
	tps := make([]float64, len(curve))
	for i, c := range curve {
		tps[i] = c.TPS
	}
	peak, top := Peak(tps)
	m := ClosedLoop{BaseUsers: curve[0].Users, BaseMS: curve[0].MeanMS, ThinkMS: LivedThinkMS(curve[0], think), Peak: peak, PeakPoints: len(top)}
	m.Knee = m.Peak * (m.BaseMS + m.ThinkMS) / 1000
	return m
}

// Model metric names stored with each point, which reports read back.
const (
	ModelKnee     = "knee_users"
	ModelPeak     = "peak_tps"
	ModelBase     = "base_response_ms"
	ModelBaseN    = "base_users"
	ModelThink    = "think_ms"
	ModelStall    = "stall_model_tps"
	ModelHitShare = "hit_share"
	ModelRTO      = "rto_ms"
	ModelFullMean = "full_duplex_mean_ms"
)

// Model predicts a point's throughput: the closed loop's asymptotes fitted
// on its curve so far, and, on a mismatched link, the stalls' bound from
// the same users' full-duplex response.
func Model(r workload.Result, all []workload.Result) workload.Prediction {
	if _, ok := r.Metrics["tps"]; !ok {
		return workload.Prediction{}
	}
	if rate := r.Params.Float("rate"); rate > 0 {
		return workload.Prediction{Metrics: map[string]float64{"tps": rate},
			Formula: fmt.Sprintf("open loop: tps = the arrival rate, %s/s, while the server keeps up", FormatTPS(rate))}
	}
	pred := closedLoopModel(r, all)
	if Mismatched(r) {
		// The stalls' bound needs the full-duplex twin, not the curve: a
		// mismatched point alone on its curve still gets it.
		if s, ok := stallModel(r, all); ok {
			if pred.Metrics == nil {
				pred.Metrics, pred.Reason = map[string]float64{}, ""
			}
			for k, v := range s.metrics {
				pred.Metrics[k] = v
			}
			pred.Metrics["tps"] = s.tps
			pred.Formula = strings.TrimSuffix(s.formula+"; "+pred.Formula, "; ")
		}
	}
	return pred
}

// closedLoopModel is the closed loop's asymptotes fitted on the point's
// curve so far (no figure without another users level on it).
func closedLoopModel(r workload.Result, all []workload.Result) workload.Prediction {
	curve := curveOf(r, all)
	if len(curve) == 0 {
		return workload.Prediction{Reason: "no figure: no other users level of the same curve measured"}
	}
	n := r.Params.Float("users")
	m := FitClosedLoop(curve, ThinkMS(r.Params))
	pred := workload.Prediction{Metrics: map[string]float64{
		"tps": m.TPS(n), ModelKnee: m.Knee, ModelPeak: m.Peak, ModelBase: m.BaseMS, ModelBaseN: m.BaseUsers, ModelThink: m.ThinkMS,
	}}
	pred.Reason = kneeReason
	pred.Formula = fmt.Sprintf("closed loop: tps = min(N / (R0 + Z), X_peak) = min(%g / (%s + %s), %s/s) = %s/s; R0 = the mean response at %g users (the lightest load so far), Z = the think time lived there (N0 / X0 - R0), X_peak = the mean of the top %d points so far (seed 001's rule; the highest while there are fewer than 4); knee N* = X_peak × (R0 + Z) = %.0f users",
		n, FormatMS(m.BaseMS), FormatMS(m.ThinkMS), FormatTPS(m.Peak), FormatTPS(m.TPS(n)), m.BaseUsers, m.PeakPoints, m.Knee)
	if base := curve[0]; n < base.Users {
		if d := cpuPerTx(base); d > 0 && 1000*d < base.MeanMS {
			return belowTheLightest(pred, m, n, d)
		}
	}
	return pred
}

// belowTheLightest is the fit of a point with fewer users than any point
// of its curve, whose lightest point's response took longer than the CPU
// a transaction cost there: that response held waits (for the CPUs, the
// link) that fewer users wait less, and its users' line N / (R0 + Z) was
// a saturated throughput's, not a light load's. The fit takes the CPU a
// transaction cost, D, the response with no wait at all, capped by the
// peak (replayed on the stored transport-oltp and duplex-mismatch runs,
// the first point of each mix: the reporting mix's 10 users went from
// +338 % to +29 %, the no-think shop's and point-select's 8 users from
// +195 and +451 % to −26 and +38 %).
func belowTheLightest(pred workload.Prediction, m ClosedLoop, n, d float64) workload.Prediction {
	tps := math.Min(n/(d+m.ThinkMS/1000), m.Peak)
	pred.Metrics["tps"] = tps
	pred.Formula += fmt.Sprintf("; below the lightest point's %g users, whose response (%s) took longer than the CPU a transaction cost there (D = %s): tps = min(N / (D + Z), X_peak) = min(%g / (%s + %s), %s/s) = %s/s",
		m.BaseUsers, FormatMS(m.BaseMS), FormatMS(1000*d), n, FormatMS(1000*d), FormatMS(m.ThinkMS), FormatTPS(m.Peak), FormatTPS(tps))
	pred.Reason = "fewer users than any point of its curve: the response without waits is taken as the CPU a transaction cost at the lightest of them, which leaves out the link's round trips and the wake-ups fewer users pay, and the peak as the ceiling"
	return pred
}

type stallPrediction struct {
	tps     float64
	metrics map[string]float64
	formula string
}

// stallModel is seed 002's model of a mismatched point: its full-duplex
// twin's response at the same users plus one RTO per hit transaction.
func stallModel(r workload.Result, all []workload.Result) (stallPrediction, bool) {
	key, users := CurveKey(r, true), r.Params.Float("users")
	var sum float64
	runs := 0
	for _, o := range all {
		if o.Measured() && !Mismatched(o) && o.Params.Float("users") == users && CurveKey(o, true) == key {
			if v, ok := o.Metrics["mean_ms"]; ok {
				sum += v
				runs++
			}
		}
	}
	h := r.Histograms["latency"]
	if runs == 0 || h == nil || h.Count() == 0 {
		return stallPrediction{}, false
	}
	full := sum / float64(runs)
	sig := diagnose.DetectWith(h, diagnose.Evidence{Users: int64(users), SecondMax: r.Series["max_ms"]})
	share := 0.0
	if sig.Found {
		share = sig.HitShare
	}
	rto := 1000 * rtoSeconds(r.Link())
	z := ThinkMS(r.Params)
	tps := users / ((full + z + share*rto) / 1000)
	return stallPrediction{tps: tps,
		metrics: map[string]float64{ModelStall: tps, ModelHitShare: share, ModelRTO: rto, ModelFullMean: full},
		formula: fmt.Sprintf("duplex mismatch: tps = N / (R_full + Z + h × RTO) = %g / (%s + %s + %.2f %% × %s) = %s/s; R_full = the full-duplex mean response at %g users, h = the transactions in RTO-spaced clusters (dbrig diagnose), each charged one RTO",
			users, FormatMS(full), FormatMS(z), 100*share, FormatMS(rto), FormatTPS(tps), users)}, true
}

// FormatTPS writes transactions per second: "9120", "87.5".
func FormatTPS(v float64) string {
	if v >= 100 {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'f', 1, 64)
}

// FormatMS writes milliseconds for a formula: "3.2 ms", "210 µs".
func FormatMS(v float64) string {
	switch {
	case math.IsNaN(v):
		return "-"
	case v == 0:
		return "0 ms"
	case v < 1:
		return fmt.Sprintf("%.0f µs", v*1000)
	case v < 10:
		return fmt.Sprintf("%.2f ms", v)
	}
	return fmt.Sprintf("%.1f ms", v)
}

// p99Unmodelled says why no model predicts the 99th percentile: the
// simplest candidate, the nearest users level's p99 over its mean times
// the predicted mean response, missed by a median of 31 to 38 % (p90 224
// to 294 %) replayed on two quick transport-oltp runs at load average 23
// to 108, where the closed loop's tps missed by a median of 20 to 30 %.
const p99Unmodelled = "no model: a closed loop's tail is how the machine schedules the users, the server and the links on its cores, which no point before it tells (the nearest users level's p99 scaled by the predicted mean missed by a median of 31 to 38 %, p90 224 to 294 %, on two quick transport-oltp runs at load average 23 to 108)"

// kneeReason is what the closed loop leaves out, said where it misses.
const kneeReason = "the knee is sharp in the model: near it, waiting for the server lowers the throughput below both asymptotes"

// saturatedShare is how far below the light-load line N / (R0 + Z) a
// point's throughput must fall for the server, not the users, to have set
// it: a point there measured the server's capacity.
const saturatedShare = 0.9

// saturatedPoints are the points of a curve that fell below saturatedShare
// of the light-load line of cycle (R0 + Z, ms): the server set them.
func saturatedPoints(curve []CurvePoint, cycle float64) []CurvePoint {
	var out []CurvePoint
	for _, c := range curve {
		if c.TPS < saturatedShare*c.Users/(cycle/1000) {
			out = append(out, c)
		}
	}
	return out
}

// Predict is the closed loop before the point runs, from its curve's
// points measured before it: tps = min(N / (R0 + Z), X_cap), R0 + Z the
// cycle the users lived at the lightest load (N0 / X0, Little's law),
// X_cap the CPUs the machine left the load at the latest saturated points
// over the CPU a transaction costs, the load's CPUs before any point
// saturated (capacity.go); an open loop's is its
// arrival rate, a mismatched link's its twin's cycle with its collisions'
// stalls (predict_mismatch.go). A curve without a point before it takes its cycle from the
// nearest link's curve of the same load. Where the monitor saw no server
// CPU (a target), X_cap is the throughput of the points that saturated the
// server (seed 001's top-4 mean of them), or before any, a saturated
// sibling curve's scaled (predict.go).
func Predict(r workload.Result, before []workload.Result) workload.Prediction {
	if rate := r.Params.Float("rate"); rate > 0 {
		return workload.Prediction{Metrics: map[string]float64{"tps": rate},
			Formula: fmt.Sprintf("open loop: tps = the arrival rate, %s/s, while the server keeps up", FormatTPS(rate)),
			Reason:  "an open loop's throughput is its rate until the server saturates"}
	}
	if Mismatched(r) {
		return predictMismatched(r, before)
	}
	curve := curveOf(r, before)
	return withLockWaits(predictClosedLoop(r, before, curve), curve)
}

// lockWaitShare is the share of a point's users waiting on a lock in the
// server from which a prediction says that more users will
// wait more: the shop's 32 users without think time had 2.2 sessions
// waiting (7 %), its 128 users 43 (34 %), and gave 2,831/s where the
// CPUs' capacity predicted 6,410/s.
const lockWaitShare = 0.05

// withLockWaits adds to a prediction's reason that the users of its
// curve's heaviest point so far already waited in the server, a queue the
// CPUs' capacity leaves out.
func withLockWaits(pred workload.Prediction, curve []CurvePoint) workload.Prediction {
	if len(curve) == 0 || pred.Metrics == nil {
		return pred
	}
	heaviest := curve[len(curve)-1]
	if heaviest.Users <= 0 || heaviest.LockWaits < lockWaitShare*heaviest.Users {
		return pred
	}
	pred.Reason += fmt.Sprintf("; at %g users, its most so far, %.1f sessions waited on locks in the server on average: more users wait longer, a queue the CPUs' capacity leaves out",
		heaviest.Users, heaviest.LockWaits)
	return pred
}

// predictClosedLoop is Predict's closed loop (see Predict).
func predictClosedLoop(r workload.Result, before []workload.Result, curve []CurvePoint) workload.Prediction {
	sibs := siblingsOf(r, before)
	lightest, through := curve, ""
	if len(curve) == 0 {
		if len(sibs) == 0 {
			return workload.Prediction{Reason: "no prediction: first point of its curve, and no other link's curve of the same load measured before it"}
		}
		lightest, through = sibs[0].curve, " through "+sibs[0].link
	}
	n, base := r.Params.Float("users"), lightest[0]
	z := LivedThinkMS(base, ThinkMS(r.Params))
	cycle := base.MeanMS + z
	free := n / (cycle / 1000)
	var saturated []float64
	var cpus []float64
	for _, c := range saturatedPoints(curve, cycle) {
		saturated = append(saturated, c.TPS)
		if c.ServerCPU > 0 {
			cpus = append(cpus, c.ServerCPU)
		}
	}
	pred := workload.Prediction{Metrics: map[string]float64{"tps": free}}
	pred.Formula = fmt.Sprintf("closed loop: tps = N / (R0 + Z) = %g / (%s + %s) = %s/s; R0 = the mean response at %g users%s, the lightest load measured before, Z = the think time its users lived (N0 / X0 - R0; %s set)",
		n, FormatMS(base.MeanMS), FormatMS(z), FormatTPS(free), base.Users, through, FormatMS(ThinkMS(r.Params)))
	pred, capped := capByCPUs(pred, r, before, curve, sibs)
	if capped {
		return pred
	}
	if len(saturated) == 0 {
		return capBySiblings(pred, sibs, curve, through)
	}
	capacity, top := Peak(saturated)
	if capacity < free {
		pred.Metrics["tps"] = capacity
	}
	pred.Formula += fmt.Sprintf(", capped by the server's capacity %s/s (the mean of the top %d of the %d points before it that fell below %.0f %% of N / (R0 + Z)): tps = %s/s",
		FormatTPS(capacity), len(top), len(saturated), 100*saturatedShare, FormatTPS(pred.Metrics["tps"]))
	pred.Reason = capacityReason(saturated, cpus)
	return pred
}

// capBySiblings caps a prediction whose own curve has not saturated the
// server yet by the capacity its nearest sibling curve saturated at,
// scaled by the CPU one transaction costs on each.
func capBySiblings(pred workload.Prediction, sibs []sibling, own []CurvePoint, through string) workload.Prediction {
	free := pred.Metrics["tps"] // the users' line, uncapped yet
	capacity, words, ok := siblingCapacity(sibs, own)
	if !ok {
		pred.Reason = "no point before it saturated the server: its capacity is unknown, and the throughput is capped by the users only"
		if through != "" {
			pred.Reason = "the first point of its curve: the users' cycle is another link's, and " + pred.Reason
		}
		return pred
	}
	if capacity < free {
		pred.Metrics["tps"] = capacity
	}
	pred.Formula += fmt.Sprintf(", capped by the server's capacity %s/s (%s): tps = %s/s", FormatTPS(capacity), words, FormatTPS(pred.Metrics["tps"]))
	pred.Reason = kneeReason + "; no point of its own curve saturated the server before it: its capacity is another link's, scaled by the CPU a transaction costs on each, and the CPU the machine's other load leaves moves from point to point"
	return pred
}

// capacityReason says what the capacity taken from the points before
// leaves out, with what is known of it before the point runs: how far the
// saturated points spread, and how many CPUs the server kept busy at them.
// A server that saturated short of the machine's CPUs was given no more:
// the machine's other load (the client, the links, other programs) sets
// the capacity, and moves it from point to point.
func capacityReason(saturated, cpus []float64) string {
	var why []string
	if lo, hi := slices.Min(saturated), slices.Max(saturated); len(saturated) > 1 && hi > 1.1*lo {
		why = append(why, fmt.Sprintf("the saturated points before it spread from %s/s to %s/s", FormatTPS(lo), FormatTPS(hi)))
	}
	if len(cpus) > 0 {
		lo, hi := slices.Min(cpus), slices.Max(cpus)
		span := fmt.Sprintf("%.2f", lo)
		if hi > lo {
			span += fmt.Sprintf(" to %.2f", hi)
		}
		why = append(why, fmt.Sprintf("the server kept %s CPUs busy at them", span))
	}
	if len(why) == 0 {
		return kneeReason
	}
	return fmt.Sprintf("%s; %s: the server's capacity is the CPU the machine leaves it, which its other load (the client, the links, other programs) changes from point to point",
		kneeReason, strings.Join(why, ", and "))
}
