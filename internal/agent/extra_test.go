package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/dbrig/dbrig/internal/load"
	"github.com/dbrig/dbrig/internal/measure"
)

// TestMergeExtrasIsExact: three agents' hand-made per-statement
// distributions, of different shapes, sent as the wire carries them; the
// merged counters are the sums, and every merged percentile is that of
// one histogram of all the samples, which averaging the agents'
// percentiles is not.
func TestMergeExtrasIsExact(t *testing.T) {
	t.Parallel()
	shapes := []struct {
		base, step time.Duration
		n          int
	}{{200 * time.Microsecond, 3 * time.Microsecond, 5000}, {2 * time.Millisecond, 40 * time.Microsecond, 300}, {30 * time.Millisecond, time.Millisecond, 40}}
	statements := []string{"script.0.command.1.latency", "script.0.command.3.latency"}
	all := map[string]*measure.Histogram{}
	for _, name := range statements {
		all[name] = measure.NewHistogram()
	}
	var parts []*Extra
	for i, sh := range shapes {
		e := &Extra{Counters: map[string]int64{"script.0.ok": int64(sh.n), "script.0.command.3.failures": int64(i)}, Histograms: map[string]*measure.Histogram{}}
		for k, name := range statements {
			h := measure.NewHistogram()
			for j := range sh.n {
				d := sh.base + time.Duration((j*7+k)%sh.n)*sh.step
				h.Record(d)
				all[name].Record(d)
			}
			e.Histograms[name] = h
		}
		b, err := json.Marshal(Message{Type: TypeResult, Extra: e})
		if err != nil {
			t.Fatal(err)
		}
		var m Message
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		parts = append(parts, m.Extra)
	}
	parts = append(parts, nil) // an agent whose workload has none
	merged := MergeExtras(parts)
	if got := merged.Counters["script.0.ok"]; got != 5340 {
		t.Errorf("merged ok %d, want 5340", got)
	}
	if got := merged.Counters["script.0.command.3.failures"]; got != 3 {
		t.Errorf("merged failures %d, want 3", got)
	}
	for _, name := range statements {
		got, want := merged.Histograms[name], all[name]
		if got.Count() != want.Count() || got.Mean() != want.Mean() {
			t.Errorf("%s: %d samples, mean %v; all samples %d, mean %v", name, got.Count(), got.Mean(), want.Count(), want.Mean())
		}
		for _, q := range []float64{0.5, 0.9, 0.99, 0.999, 1} {
			if g, w := got.Quantile(q), want.Quantile(q); g != w {
				t.Errorf("%s q%v: merged %v, all samples %v", name, q, g, w)
			}
		}
	}
	if p99 := merged.Histograms[statements[0]].Quantile(0.99); p99 == averageQuantile(parts[:3], statements[0], 0.99) {
		t.Errorf("the shapes do not tell a merge from an average: p99 %v both", p99)
	}
	if MergeExtras([]*Extra{nil, nil}) != nil {
		t.Error("no agent sent an Extra, yet the merge made one")
	}
}

func averageQuantile(parts []*Extra, name string, q float64) time.Duration {
	var sum time.Duration
	for _, p := range parts {
		sum += p.Histograms[name].Quantile(q)
	}
	return sum / time.Duration(len(parts))
}

// tallier is a sleeper that counts its operations in the measured
// interval the agent gave it, and reports them as an Extra.
type tallier struct {
	sleeper
	mu       sync.Mutex
	from, to time.Time
	ops      int64
	latency  *measure.Histogram
}

func (s *tallier) NewWorker(ctx context.Context, id int) (load.Worker, error) {
	w, _ := s.sleeper.NewWorker(ctx, id)
	return &tallyWorker{Worker: w, s: s}, nil
}

func (s *tallier) Measuring(from, to time.Time) { s.from, s.to = from, to }

func (s *tallier) Extra() *Extra {
	s.mu.Lock()
	defer s.mu.Unlock()
	return &Extra{Counters: map[string]int64{"ops": s.ops, "window_ms": s.to.Sub(s.from).Milliseconds()},
		Histograms: map[string]*measure.Histogram{"nap": s.latency}}
}

type tallyWorker struct {
	load.Worker
	s *tallier
}

func (w *tallyWorker) Do(ctx context.Context, tx int) error {
	start := time.Now()
	err := w.Worker.Do(ctx, tx)
	if end := time.Now(); err == nil && !end.Before(w.s.from) && end.Before(w.s.to) {
		w.s.mu.Lock()
		w.s.ops++
		w.s.latency.Record(end.Sub(start))
		w.s.mu.Unlock()
	}
	return err
}

// TestRunLoadCarriesTheWorkloadsExtra: agents whose workload is a
// Reporter are told the measured interval at the common start and send
// their Extra with the result; the outcome keeps each agent's and their
// merge.
func TestRunLoadCarriesTheWorkloadsExtra(t *testing.T) {
	t.Parallel()
	var procs []*inProcess
	for i := range 2 {
		p := startInProcess(t, fmt.Sprintf("a%d", i+1), "v1", time.Duration(i+1)*time.Millisecond, 0)
		procs = append(procs, p)
	}
	agents := connectAll(t, procs...)
	out, err := RunLoad(t.Context(), agents, LoadSpec{Workload: "tally", Params: map[string]int{}, Config: load.Config{
		Users: 3, WarmUp: 300 * time.Millisecond, Duration: time.Second, Seed: 7}})
	if err != nil {
		t.Fatal(err)
	}
	var ops int64
	sum := measure.NewHistogram()
	for _, ar := range out.Agents {
		e := ar.Extra
		if e == nil || e.Counters["ops"] == 0 || e.Counters["window_ms"] != 1000 || e.Histograms["nap"].Count() != e.Counters["ops"] {
			t.Fatalf("agent %s: extra %+v", ar.Name, e)
		}
		ops += e.Counters["ops"]
		sum.Merge(e.Histograms["nap"])
	}
	if out.Extra == nil || out.Extra.Counters["ops"] != ops || out.Extra.Histograms["nap"].Quantile(0.99) != sum.Quantile(0.99) {
		t.Errorf("merged extra %+v, the agents' ops %d", out.Extra, ops)
	}
}
