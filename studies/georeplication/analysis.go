package georeplication

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/dbrig/dbrig/internal/replication"
	"github.com/dbrig/dbrig/internal/study"
	"github.com/dbrig/dbrig/internal/workload/georep"
)

// The seed's legacy (Windows Server 2003, SQL Server 2005) and autotuned
// (Windows Server 2008, SQL Server 2008) stacks are the study's two window
// profiles; the seed's gain is (A - B) / B × 100 with A the legacy time.
const (
	legacy    = "legacy-window"
	autotuned = "autotuned"
	// stack is the whole 2003 stack: the 64 KiB window and the 8 KB
	// Winsock send buffer. Where a run measured it, it is the seed's A.
	stack = "legacy-stack"
)

// row of the seed's Table 2, as the study reproduces it.
type table2Row struct {
	id, label string
	scenario  string
	payload   string
	seedBytes float64 // the seed's volume, to scale our rate to its size
}

var table2 = []table2Row{
	{"push-char", "push, 1 KB character rows (1 GB)", "push", "char-1k", 1e9},
	{"pull-char", "pull, 1 KB character rows (1 GB)", "pull", "char-1k", 1e9},
	{"linked-server", "linked server, 1 KB character rows (10 MB)", "fdw-row", "char-1k", 10e6},
	{"push-binary", "push, varbinary(max) rows (112 MB)", "push", "bytea-1.1k", 112e6},
	{"pull-binary", "pull, varbinary(max) rows (112 MB)", "pull", "bytea-1.1k", 112e6},
}

type analysis struct {
	rd   *study.RunData
	sums map[string]*study.Summary // by key(scenario, payload, rows, wan, window), the agent's default buffer
	// larger holds the points whose agent ran with another buffer than the
	// default, for the agent's profile finding alone, by the same key.
	larger map[string]*study.Summary
	wans   []string // link base profiles, by RTT
}

// defaultBuffer is whether a point's agent ran with its default command
// buffer, as every finding but the profile's compares.
func defaultBuffer(s *study.Summary) bool {
	_, ok := s.Params["buffer_size"]
	return !ok || s.Params.Int("buffer_size") == replication.DefaultBufferSize
}

func key(scenario, payload string, rows int64, wan, window string) string {
	return fmt.Sprintf("%s|%s|%d|%s|%s", scenario, payload, rows, wan, window)
}

// splitProfile cuts "tukwila-blueridge+legacy-window" into its base and
// window modifier.
func splitProfile(p string) (wan, window string) {
	wan, window, _ = strings.Cut(p, "+")
	return wan, window
}

func newAnalysis(rd *study.RunData) *analysis {
	a := &analysis{rd: rd, sums: map[string]*study.Summary{}, larger: map[string]*study.Summary{}}
	rtt := map[string]float64{}
	for _, s := range rd.Summaries {
		r := s.Results[0]
		wan, window := splitProfile(study.LinkOf(r).Profile)
		into := a.sums
		if !defaultBuffer(s) {
			into = a.larger
		}
		into[key(s.Params.String("scenario"), s.Params.String("payload"), s.Params.Int("rows"), wan, window)] = s
		if _, ok := rtt[wan]; !ok {
			rtt[wan] = study.LinkOf(r).RTTSeconds
			a.wans = append(a.wans, wan)
		}
	}
	sort.SliceStable(a.wans, func(i, j int) bool { return rtt[a.wans[i]] < rtt[a.wans[j]] })
	return a
}

// largest finds the largest row count measured for a scenario and payload
// on both windows of a WAN.
func (a *analysis) largest(scenario, payload, wan string) int64 {
	var best int64
	for _, s := range a.rd.Summaries {
		if s.Params.String("scenario") != scenario || s.Params.String("payload") != payload {
			continue
		}
		w, _ := splitProfile(study.LinkOf(s.Results[0]).Profile)
		rows := s.Params.Int("rows")
		if sa, _ := a.seedA(scenario, payload, rows, wan); w == wan && rows > best && sa != nil && a.sums[key(scenario, payload, rows, wan, autotuned)] != nil {
			best = rows
		}
	}
	return best
}

// seedA is the point standing for the seed's A (Windows Server 2003): the
// whole legacy stack where the run measured it, else the legacy window
// alone; and the profile modifier it ran with.
func (a *analysis) seedA(scenario, payload string, rows int64, wan string) (*study.Summary, string) {
	if s := a.get(scenario, payload, rows, wan, stack); s != nil {
		return s, stack
	}
	return a.get(scenario, payload, rows, wan, legacy), legacy
}

// armName says what an A point ran with, for a finding's text.
func armName(window string) string {
	if window == stack {
		return "the 2003 stack (64 KiB window, 8 KB send buffer)"
	}
	return "a 64 KiB window"
}

func (a *analysis) get(scenario, payload string, rows int64, wan, window string) *study.Summary {
	return a.sums[key(scenario, payload, rows, wan, window)]
}

// model is a summary's model prediction, from its last run.
func model(s *study.Summary, metric string) float64 {
	if s == nil {
		return math.NaN()
	}
	if v, ok := georep.Model(s.Results[len(s.Results)-1], nil).Metrics[metric]; ok {
		return v
	}
	return math.NaN()
}

func fmtGain(g float64) string {
	if math.IsNaN(g) {
		return "-"
	}
	return fmt.Sprintf("%.0f %%", g)
}

func fmtSec(s float64) string {
	if math.IsNaN(s) {
		return "-"
	}
	return study.FormatMetric("seconds", s)
}

// speedupTolerance is how far, as a factor either way, a measured
// speed-up may lie from the seed's and still say the same: each of the two
// times on a busy machine moves by up to about 20 %, so their ratio by up
// to about 1.5x.
const speedupTolerance = 1.5

// sameSpeedup reports whether two gains (the seed's (A - B) / B × 100)
// mean speed-ups within speedupTolerance of each other, on a log scale: a
// slowdown is as far from a speed-up as the ratio says, and 14x is not
// 114x.
func sameSpeedup(got, published float64) bool {
	return math.Abs(math.Log((1+got/100)/(1+published/100))) <= math.Log(speedupTolerance)
}

// speedup puts a gain as the speed-up it means: "13.99x", "0.95x".
func speedup(g float64) string { return fmt.Sprintf("%.2fx", 1+g/100) }
