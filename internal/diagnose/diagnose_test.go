package diagnose

import (
	"bytes"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dbrig/dbrig/internal/measure"
	"github.com/dbrig/dbrig/internal/study"
	"github.com/dbrig/dbrig/internal/workload"
)

// writeRun makes a run directory holding the results.
func writeRun(t *testing.T, results ...workload.Result) string {
	t.Helper()
	dir := t.TempDir()
	w, err := study.OpenResults(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for _, r := range results {
		if err := w.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// point is a hand-made OLTP point: a healthy body, and timeouts when
// stalled, with a distribution per transaction type.
func point(key string, stalled bool) workload.Result {
	rng := rand.New(rand.NewPCG(3, 4))
	all, browse, order := measure.NewHistogram(), measure.NewHistogram(), measure.NewHistogram()
	for i := range 10_000 {
		d := time.Duration(300+rng.IntN(4000)) * time.Microsecond
		h := browse
		if i%4 == 0 {
			h = order
		}
		h.Record(d)
		all.Record(d)
	}
	if stalled {
		for k, n := range []int{400, 25, 2} {
			for range n {
				d := time.Duration(k+1)*(200*time.Millisecond+200*time.Microsecond) + time.Duration(rng.IntN(3000))*time.Microsecond
				order.Record(d)
				all.Record(d)
			}
		}
	}
	r := workload.Result{Study: "hand-made", Key: key + " #1", Combo: key, Run: 1, Values: map[string]any{"net": key},
		Metrics:    map[string]float64{"users": 32, "tps": 1000},
		Series:     map[string][]float64{"max_ms": {4, 5, 6}},
		Histograms: map[string]*measure.Histogram{"latency": all, "latency/browse": browse, "latency/place-order": order}}
	if stalled {
		r.Links = []workload.LinkResult{{Name: "client-db", Mode: "link", Profile: "lan-1g+duplex-mismatch", Duplex: "mismatch", RTOSeconds: 0.2002, LostSegments: 431, ForwardSegments: 90_000}}
	}
	return r
}

func TestRunNamesTheStalledPoints(t *testing.T) {
	dir := writeRun(t, point("lan-1g", false), point("lan-1g+duplex-mismatch", true),
		workload.Result{Key: "failed #1", Combo: "failed", Error: "boom"})
	d, err := Run(dir)
	if err != nil {
		t.Fatal(err)
	}
	if d.Found != 1 || len(d.Points) != 2 || !d.Points[1].Found || d.Points[0].Found || len(d.Without) != 1 {
		t.Fatalf("diagnosis: %+v", d)
	}
	var text bytes.Buffer
	if err := d.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	out := text.String()
	for _, want := range []string{
		"Retransmission stalls in 1 of 2 points:\n  lan-1g+duplex-mismatch #1\n      427 of 10,427 transactions stalled (4.1 %): clusters at 1, 2, 3 × ",
		"by transaction: place-order 15 %, browse 0 %",
		"link client-db (lan-1g+duplex-mismatch, duplex mismatch), retransmission timeout 200.2ms: 431 segments lost, against 90,000 sent client to server",
		"No signature in 1 point:\n  lan-1g #1: no window",
		"Not diagnosed: failed #1: failed.",
		"What it means",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the text lacks %q:\n%s", want, out)
		}
	}
	b, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	var back struct {
		Found  int
		Points []struct {
			Point     string
			Found     bool
			HitShare  float64 `json:"hit_share"`
			SpacingMS float64 `json:"spacing_ms"`
			Over1s    int64   `json:"over_1s"`
		}
	}
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if p := back.Points[1]; back.Found != 1 || !p.Found || p.HitShare < 0.04 || p.SpacingMS < 199 || p.SpacingMS > 204 || p.Over1s != 0 {
		t.Errorf("JSON: %s", b)
	}
}

// TestSlowTypeIsNotAStall: a report that takes 210 to 240 ms by itself
// beside fast lookups makes a cluster from 200 ms on, and more of them
// than users; its own median says it is its ordinary time.
func TestSlowTypeIsNotAStall(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	all, fast, slow := measure.NewHistogram(), measure.NewHistogram(), measure.NewHistogram()
	for range 10_000 {
		d := time.Duration(300+rng.IntN(4000)) * time.Microsecond
		fast.Record(d)
		all.Record(d)
	}
	for range 400 {
		d := 210*time.Millisecond + time.Duration(rng.IntN(30_000))*time.Microsecond
		slow.Record(d)
		all.Record(d)
	}
	for range 30 { // and its slowest, twice as long
		d := 420*time.Millisecond + time.Duration(rng.IntN(30_000))*time.Microsecond
		slow.Record(d)
		all.Record(d)
	}
	r := workload.Result{Key: "mixed #1", Metrics: map[string]float64{"users": 16},
		Histograms: map[string]*measure.Histogram{"latency": all, "latency/lookup": fast, "latency/report": slow}}
	if s := Detect(all); !s.Found {
		t.Fatalf("the whole distribution alone should look stalled: %s", s.Why)
	}
	p, ok := Result(r)
	if !ok || p.Found || !strings.Contains(p.Why, "slow by themselves: report (median 2") {
		t.Errorf("found %v: %s", p.Found, p.Why)
	}
}

func TestRunRefusesWhatIsNotARun(t *testing.T) {
	file := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	noHist := point("x", false)
	noHist.Histograms = nil
	bad := t.TempDir()
	if err := os.WriteFile(filepath.Join(bad, study.ResultsFile), []byte("{not json\n{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		dir, says string
	}{
		{filepath.Join(t.TempDir(), "missing"), "no such directory"},
		{file, "is a file, not a run directory"},
		{t.TempDir(), "has no results.jsonl"},
		{writeRun(t), "no finished point yet"},
		{writeRun(t, noHist), "no point recorded a latency distribution"},
		{bad, "results.jsonl:1: not a result"},
	} {
		_, err := Run(tc.dir)
		var ie *InputError
		if !errors.As(err, &ie) || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("Run(%s) = %v, want an input error saying %q", tc.dir, err, tc.says)
		}
	}
}

// TestInterruptedPointIsNotDiagnosed: a point an interrupt cut short is
// no result: its partial distribution is never judged.
func TestInterruptedPointIsNotDiagnosed(t *testing.T) {
	cut := point("lan-1g+duplex-mismatch", true)
	cut.Status = workload.StatusInterrupted
	d, err := Run(writeRun(t, point("lan-1g", false), cut))
	if err != nil {
		t.Fatal(err)
	}
	if d.Found != 0 || len(d.Points) != 1 || len(d.Without) != 1 || !strings.Contains(d.Without[0], "interrupted") {
		t.Errorf("diagnosis: %d found in %d points, without %q; want the interrupted point set aside", d.Found, len(d.Points), d.Without)
	}
}
