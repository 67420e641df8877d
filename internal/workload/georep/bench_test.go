package georep

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dbrig/dbrig/internal/benchgoal"
	"github.com/dbrig/dbrig/internal/link"
	"github.com/dbrig/dbrig/internal/replication"
	"github.com/dbrig/dbrig/internal/units"
)

// benchEnv reads a positive integer from the environment.
func benchEnv(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}

// benchProfile is the WAN of the targets (DBRIG_BENCH_LINK, default
// tukwila-blueridge+autotuned: 77 ms, 1 Gbit/s, 16 MiB window).
func benchProfile(tb testing.TB) (string, link.Config) {
	name := os.Getenv("DBRIG_BENCH_LINK")
	if name == "" {
		name = "tukwila-blueridge+autotuned"
	}
	cfg, err := link.ParseProfile(name)
	if err != nil {
		tb.Fatal(err)
	}
	return name, cfg
}

// series collects one measurement's repetitions.
type series struct {
	name string
	secs []float64
}

func (s *series) add(d time.Duration) { s.secs = append(s.secs, d.Seconds()) }

func (s *series) median() float64 {
	v := slices.Clone(s.secs)
	slices.Sort(v)
	n := len(v)
	if n == 0 {
		return 0
	}
	if n%2 == 1 {
		return v[n/2]
	}
	return (v[n/2-1] + v[n/2]) / 2
}

func (s *series) String() string {
	var parts []string
	for _, v := range s.secs {
		parts = append(parts, fmt.Sprintf("%.3f", v))
	}
	return fmt.Sprintf("%-44s median %7.3f s  (runs: %s)", s.name, s.median(), strings.Join(parts, ", "))
}

// BenchmarkTargets measures the three targets in one run, on one
// pair of servers, and prints the ratios:
//
//  1. pull over the WAN against the same agent over a direct loopback
//     connection (target: at most 1.5x the time);
//  2. pipelined push over the WAN against pull over the WAN (target: at
//     most 1.5x the time);
//  3. the agent's apply throughput on loopback against PostgreSQL's native
//     logical replication of the same rows (target: at least 1x).
//
// Every figure is the median of DBRIG_BENCH_ROUNDS rounds (default 3), the
// measurements of a round interleaved, since the machine's other load
// drifts. "Drain" figures time a backlog of DBRIG_BENCH_ROWS rows (default
// 100,000 rows of 1 KB) already stored in the distribution database, from
// the moment the connected agent may read until the subscriber holds the
// last row: the agent alone. The native drain times the same backlog from
// the start of the subscription's apply worker (the walsender decodes it
// meanwhile). "End to end" figures run from the first insert's commit with
// everything running (log reader and agent, or native replication).
//
//	go test -run '^$' -bench Targets -benchtime 1x -timeout 60m ./internal/workload/georep/
func BenchmarkTargets(b *testing.B) {
	rows := benchEnv("DBRIG_BENCH_ROWS", 100_000)
	rounds := benchEnv("DBRIG_BENCH_ROUNDS", 3)
	profile, wan := benchProfile(b)
	p := startPair(b)
	ctx := testCtx(b, 60*time.Minute)
	for i := 0; i < b.N; i++ {
		var (
			direct    = series{name: "drain, direct loopback (pipeline 1)"}
			directK   = series{name: "drain, direct loopback (pipeline auto)"}
			pull      = series{name: "drain, pull over " + profile}
			push      = series{name: "drain, pipelined push over " + profile}
			native    = series{name: "drain, native logical replication, loopback"}
			pullE2E   = series{name: "end to end, pull over " + profile}
			pushE2E   = series{name: "end to end, pipelined push over " + profile}
			directE2E = series{name: "end to end, direct loopback"}
			nativeE2E = series{name: "end to end, native, loopback"}
		)
		base := ScenarioConfig{Config: p.cfg, Payload: PayloadChar1K, Rows: rows, RowsPerTransaction: 1000, SkipVerify: true}
		base.Options.Pipeline = 1 // the seed's stop-and-wait writer (the agent's default is auto)
		run := func(s *series, sc ScenarioConfig) {
			b.Helper()
			res, err := RunScenario(ctx, sc)
			if err != nil {
				b.Fatalf("%s: %v", s.name, err)
			}
			s.add(res.Elapsed)
			b.Logf("  %-44s %7.3f s %8.0f rows/s %6.1f MB/s  %d round trips, pipeline %d, restarts %d",
				s.name, res.Elapsed.Seconds(), res.RowsPerSec, res.MBPerSec, res.Agent.RoundTrips, res.Agent.Pipeline, res.Agent.Restarts)
		}
		runNative := func(s *series, preload bool) {
			b.Helper()
			res, err := RunNative(ctx, NativeConfig{Publisher: p.pub.Conn("app"), Subscriber: p.sub.Conn("app"),
				Payload: PayloadChar1K, Rows: rows, RowsPerTransaction: 1000, Preload: preload, SkipVerify: true})
			if err != nil {
				b.Fatalf("%s: %v", s.name, err)
			}
			s.add(res.Elapsed)
			b.Logf("  %-44s %7.3f s %8.0f rows/s %6.1f MB/s", s.name, res.Elapsed.Seconds(), res.RowsPerSec, res.MBPerSec)
		}
		withLink := func(upstream string, f func(via string)) {
			l, err := link.Listen(ctx, "127.0.0.1:0", upstream, wan)
			if err != nil {
				b.Fatal(err)
			}
			defer l.Close()
			f(l.Addr())
		}
		pipelined := base
		pipelined.Options.Pipeline = replication.PipelineAuto
		for r := 0; r < rounds; r++ {
			b.Logf("round %d of %d, %d rows of 1 KB:", r+1, rounds, rows)
			pre := base
			pre.Preload = true
			run(&direct, withMode(pre, replication.Pull, ""))
			preK := pipelined
			preK.Preload = true
			run(&directK, withMode(preK, replication.Pull, ""))
			runNative(&native, true)
			withLink(p.pub.Conn("app").Addr(), func(via string) { run(&pull, withMode(pre, replication.Pull, via)) })
			withLink(p.sub.Conn("app").Addr(), func(via string) { run(&push, withMode(preK, replication.Push, via)) })
			run(&directE2E, withMode(base, replication.Pull, ""))
			runNative(&nativeE2E, false)
			withLink(p.pub.Conn("app").Addr(), func(via string) { run(&pullE2E, withMode(base, replication.Pull, via)) })
			withLink(p.sub.Conn("app").Addr(), func(via string) { run(&pushE2E, withMode(pipelined, replication.Push, via)) })
		}
		b.Logf("medians over %d rounds of %d rows:", rounds, rows)
		for _, s := range []*series{&direct, &directK, &native, &pull, &push, &directE2E, &nativeE2E, &pullE2E, &pushE2E} {
			b.Logf("  %s", s)
		}
		r1 := pull.median() / direct.median()
		r2 := push.median() / pull.median()
		r3 := native.median() / direct.median()
		r3k := native.median() / directK.median()
		e1 := pullE2E.median() / directE2E.median()
		e2 := pushE2E.median() / pullE2E.median()
		e3 := nativeE2E.median() / directE2E.median()
		b.Logf("target 1: pull over the WAN / direct, time:             drain %.2f, end to end %.2f (want <= 1.5)", r1, e1)
		b.Logf("target 2: pipelined push / pull over the WAN, time:    drain %.2f, end to end %.2f (want <= 1.5)", r2, e2)
		b.Logf("target 3: agent / native throughput on loopback:       drain %.2f (pipeline 1), %.2f (pipeline auto); end to end %.2f (want >= 1)", r3, r3k, e3)
		b.ReportMetric(r1, "pull/direct")
		b.ReportMetric(r2, "push/pull")
		b.ReportMetric(r3, "agent/native")
		b.ReportMetric(r3k, "agentK/native")
		b.ReportMetric(e1, "e2e-pull/direct")
		b.ReportMetric(e2, "e2e-push/pull")
		b.ReportMetric(e3, "e2e-dbrig/native")
	}
}

// BenchmarkSeedModels sets the seed's agents beside the models of
// ../shared/studies/geo-replication.md on DBRIG_BENCH_MODEL_ROWS rows
// (default 10,000 rows of 1 KB) over the 77 ms link: a stop-and-wait push
// takes about (bytes / buffer) x RTT + bytes / rate; a streaming pull (or a
// push pipelined deep enough) about bytes / min(rate, window / RTT) plus a
// few RTTs, with the legacy 64 KiB window and the autotuned 16 MiB one.
// Run it with:
//
//	go test -run '^$' -bench SeedModels -benchtime 1x ./internal/workload/georep/
func BenchmarkSeedModels(b *testing.B) {
	rows := benchEnv("DBRIG_BENCH_MODEL_ROWS", 10_000)
	p := startPair(b)
	ctx := testCtx(b, 30*time.Minute)
	for i := 0; i < b.N; i++ {
		for _, tc := range []struct {
			profile  string
			mode     replication.Mode
			pipeline int
		}{
			{"tukwila-blueridge+legacy-window", replication.Push, 1},
			{"tukwila-blueridge+autotuned", replication.Push, 1},
			{"tukwila-blueridge+legacy-window", replication.Pull, 1},
			{"tukwila-blueridge+autotuned", replication.Pull, 1},
			{"tukwila-blueridge+legacy-window", replication.Push, replication.PipelineAuto},
			{"tukwila-blueridge+autotuned", replication.Push, replication.PipelineAuto},
		} {
			wan, err := link.ParseProfile(tc.profile)
			if err != nil {
				b.Fatal(err)
			}
			l, err := link.Listen(ctx, "127.0.0.1:0", tc.mode.Crossing(p.cfg.Distribution(), p.cfg.Subscriber).Addr(), wan)
			if err != nil {
				b.Fatal(err)
			}
			sc := withMode(ScenarioConfig{Config: p.cfg, Payload: PayloadChar1K, Rows: rows, RowsPerTransaction: 1000, Preload: true, SkipVerify: true,
				Options: replication.AgentOptions{Pipeline: tc.pipeline}}, tc.mode, l.Addr())
			res, err := RunScenario(ctx, sc)
			st := l.Stats()
			l.Close()
			if err != nil {
				b.Fatal(err)
			}
			// The bytes that crossed: the writer's messages (push; the link
			// also carried the pipeline's probe) or the reader's result set
			// (pull).
			bytes := float64(res.Agent.SentBytes)
			if tc.mode == replication.Pull {
				bytes = float64(st.Reverse.Bytes)
			}
			rtt := wan.EffectiveRTT().Seconds()
			rate := wan.Rate.BytesPerSecond()
			var model float64
			name := tc.mode.String()
			if tc.mode == replication.Push && tc.pipeline == 1 {
				model = float64(res.Agent.RoundTrips)*rtt + bytes/rate
			} else {
				// A stream (pull), or a pipeline deep enough to be one.
				model = bytes/min(rate, float64(wan.Window)/rtt) + 2*rtt
				if tc.mode == replication.Push {
					name = fmt.Sprintf("push, pipeline %d", res.Agent.Pipeline)
				}
			}
			b.Logf("%-20s %-32s %8.3f s measured, %8.3f s model (%d round trips, %.1f MB crossed)",
				name, tc.profile, res.Elapsed.Seconds(), model, res.Agent.RoundTrips, bytes/1e6)
		}
	}
}

// durable are the settings of servers a user runs: every commit on disk.
var durable = map[string]string{"fsync": "on", "synchronous_commit": "on", "full_page_writes": "on"}

// BenchmarkFasterThanNative measures the agent as a user meets it (fsync
// on, a backlog of DBRIG_BENCH_ROWS rows of 1 KB, default 100,000, already
// stored; the agent started cold with dbrig's defaults; timed until the last
// row is visible on the subscriber) against PostgreSQL's native logical
// replication draining the same backlog on the same servers, and the same
// agent pulling across DBRIG_BENCH_LINK (default
// tukwila-blueridge+autotuned), beside the floor under any apply: the
// subscriber inserting the same rows itself by the fastest client path. It
// prints the medians of DBRIG_BENCH_ROUNDS interleaved rounds (default 5)
// and the ratios:
//
//   - native time / agent time on loopback (repl-agent-vs-native, printed
//     as a retired goal: its target, at least 1.5, was withdrawn once
//     native was measured at the subscriber's own insert floor, which no
//     apply can beat);
//
//   - pull across the link / the same agent on loopback (target: at most
//     1.2; the goal repl-pull-vs-loopback).
//
//     go test -run '^$' -bench FasterThanNative -benchtime 1x -timeout 60m ./internal/workload/georep/
func BenchmarkFasterThanNative(b *testing.B) {
	rows := benchEnv("DBRIG_BENCH_ROWS", 100_000)
	rounds := benchEnv("DBRIG_BENCH_ROUNDS", 5)
	profile, wan := benchProfile(b)
	p := startPairWith(b, durable)
	ctx := testCtx(b, 60*time.Minute)
	for i := 0; i < b.N; i++ {
		floor := series{name: "the subscriber inserting the rows itself"}
		native := series{name: "native logical replication, loopback"}
		loop := series{name: "dbrig agent cold, loopback"}
		pull := series{name: "dbrig agent cold, pull over " + profile}
		loopD := series{name: "dbrig agent connected, loopback"}
		pullD := series{name: "dbrig agent connected, pull over " + profile}
		drain := func(s, d *series, via string) {
			b.Helper()
			dc := DrainConfig{Config: p.cfg, Mode: replication.Pull, Payload: PayloadChar1K, Rows: rows, RowsPerTransaction: 1000}
			if v := os.Getenv("DBRIG_BENCH_BUFFER"); v != "" {
				n, err := units.ParseSize(v)
				if err != nil {
					b.Fatalf("DBRIG_BENCH_BUFFER: %v", err)
				}
				dc.Options.BufferSize = int(n)
			}
			t, err := replication.Pull.AgentTargets(p.cfg.Distribution(), p.cfg.Subscriber, via)
			if err != nil {
				b.Fatal(err)
			}
			dc.Agent = t
			res, err := Drain(ctx, dc)
			if err != nil {
				b.Fatalf("%s: %v", s.name, err)
			}
			s.add(res.Elapsed)
			d.add(res.Drain)
			b.Logf("  %-40s %7.3f s (connect %.3f, drain %.3f)  %8.0f rows/s  stored %s, pipeline %d, %d round trips, read %d bytes",
				s.name, res.Elapsed.Seconds(), res.Connect.Seconds(), res.Drain.Seconds(), float64(rows)/res.Elapsed.Seconds(),
				units.Size(res.Stored), res.Agent.Pipeline, res.Agent.RoundTrips, res.Agent.ReadBytes)
		}
		for r := 0; r < rounds; r++ {
			b.Logf("round %d of %d, %d rows of 1 KB:", r+1, rounds, rows)
			fl, err := InsertFloor(ctx, p.sub.Conn("app"), PayloadChar1K, rows)
			if err != nil {
				b.Fatalf("floor: %v", err)
			}
			floor.add(fl.Best())
			b.Logf("  %-40s %7.3f s  (one COPY %.3f s, 256-row INSERTs pipelined %.3f s)", floor.name, fl.Best().Seconds(), fl.Copy.Seconds(), fl.Insert.Seconds())
			res, err := RunNative(ctx, NativeConfig{Publisher: p.pub.Conn("app"), Subscriber: p.sub.Conn("app"),
				Payload: PayloadChar1K, Rows: rows, RowsPerTransaction: 1000, Preload: true, SkipVerify: true})
			if err != nil {
				b.Fatalf("native: %v", err)
			}
			native.add(res.Elapsed)
			b.Logf("  %-40s %7.3f s  %8.0f rows/s", native.name, res.Elapsed.Seconds(), res.RowsPerSec)
			drain(&loop, &loopD, "")
			l, err := link.Listen(ctx, "127.0.0.1:0", p.pub.Conn("app").Addr(), wan)
			if err != nil {
				b.Fatal(err)
			}
			drain(&pull, &pullD, l.Addr())
			l.Close()
		}
		b.Logf("medians over %d rounds of %d rows:", rounds, rows)
		for _, s := range []*series{&floor, &native, &loop, &pull, &loopD, &pullD} {
			b.Logf("  %s", s)
		}
		speed := native.median() / loop.median()
		wanRatio := pullD.median() / loopD.median()
		coldRatio := pull.median() / loop.median()
		b.Logf("agent apply rate on loopback / native's (agent cold):  %.2f (a target of 1.5 withdrawn: native runs at the insert floor)", speed)
		b.Logf("pull over %s / loopback, time of a connected agent:  %.2f (want <= 1.2)", profile, wanRatio)
		b.Logf("the same, agent cold (its connections' handshakes cross the WAN):  %.2f", coldRatio)
		b.Logf("the subscriber's own insert of the rows / native's time: %.2f; / the agent's: %.2f (no apply can be faster than the insert it makes)",
			floor.median()/native.median(), floor.median()/loop.median())
		secs := func(v float64) string { return fmt.Sprintf("%.3fs", v) }
		benchgoal.Print(b, benchgoal.Retired("repl-agent-vs-native", secs(loop.median()), secs(native.median()), speed))
		benchgoal.Where(b, "repl-agent-vs-native", "retired (its target of 1.5 withdrawn): the subscriber's own insert of the rows took %.3f s, %.2f of native's time and %.2f of the agent's, and no apply can be faster than the insert it makes",
			floor.median(), floor.median()/native.median(), floor.median()/loop.median())
		benchgoal.Print(b, benchgoal.AtMost("repl-pull-vs-loopback", secs(pullD.median()), secs(loopD.median()), wanRatio, 1.2))
		benchgoal.Where(b, "repl-pull-vs-loopback", "the agent connected; cold, its connections' handshakes cross the WAN: %.3f s against %.3f s (%.2f)",
			pull.median(), loop.median(), coldRatio)
		b.ReportMetric(native.median()/floor.median(), "native/floor")
		b.ReportMetric(speed, "agent/native")
		b.ReportMetric(wanRatio, "pull/loopback")
		b.ReportMetric(coldRatio, "cold-pull/loopback")
	}
}
