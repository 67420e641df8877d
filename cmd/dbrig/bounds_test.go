package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/dbrig/dbrig/internal/study"
)

// Every count, size, number and duration a workload takes declares its
// bound and why, so that study.Parse can refuse a typo before anything
// starts.
func TestEveryWorkloadParameterHasABound(t *testing.T) {
	t.Parallel()
	reg := newRegistry(binDirs{})
	for _, name := range reg.Names() {
		kind, _ := reg.Lookup(name)
		if u := kind.Unbounded(); len(u) > 0 {
			t.Errorf("workload %s: parameters without a bound and its reason: %s", name, strings.Join(u, ", "))
		}
	}
}

// setParam sets a [workload] parameter of a study file, in place of its
// line or after the kind, and returns the file and the parameter's line.
func setParam(t *testing.T, text, key, value string) (string, int) {
	t.Helper()
	lines := strings.Split(text, "\n")
	in, kindAt := false, -1
	for i, l := range lines {
		switch {
		case strings.HasPrefix(l, "["):
			in = l == "[workload]"
		case in && strings.HasPrefix(l, "kind ="):
			kindAt = i
		case in && (strings.HasPrefix(l, key+" =") || strings.HasPrefix(l, key+"=")):
			lines[i] = key + " = " + value
			return strings.Join(lines, "\n"), i + 1
		}
	}
	if kindAt < 0 {
		t.Fatalf("no [workload] kind in the study")
	}
	lines = append(lines[:kindAt+1], append([]string{key + " = " + value}, lines[kindAt+1:]...)...)
	return strings.Join(lines, "\n"), kindAt + 2
}

// What a workload used to refuse only once its servers ran (or never) is
// refused at parse, at the parameter's own line, with the bound and why.
func TestWorkloadValuesAreCheckedAtParse(t *testing.T) {
	t.Parallel()
	reg := newRegistry(binDirs{})
	type set struct{ key, value string }
	for _, tt := range []struct {
		study string
		sets  []set // the error is at the last one's line
		want  string
	}{
		{"rbar-latency", []set{{"rows", "2_000_000_000"}}, "rows = 2,000,000,000: at most 1,000,000,000 (the rows come from 1,000 objects cross-joined three times"},
		{"rbar-latency", []set{{"row_bytes", "99999999999"}}, "row_bytes = 99999999999B: at most 16MiB (MariaDB's REPEAT returns NULL"},
		{"rbar-latency", []set{{"client_cost", `"1h"`}}, "client_cost = 1h0m0s: at most 1s"},
		{"rbar-latency", []set{{"experiment", `"client-row-by-row"`}, {"rows", "1"}}, "rows = 1: client-row-by-row needs at least 2 rows"},
		{"key-lookup", []set{{"rows", "1"}}, "rows = 1: at least 2 (the table needs at least 2 rows)"},
		{"key-lookup", []set{{"rows", "1_000_000_000"}}, "rows = 1,000,000,000: at most 100,000,000 (a row fills an 8 KiB page"},
		{"key-lookup", []set{{"executions", "100000"}}, "executions = 100,000: at most 1,000"},
		{"read-ahead", []set{{"read_ahead", `"lots"`}}, `read_ahead = "lots": want default, minimal, off`},
		{"read-ahead", []set{{"device_size", `"2TiB"`}}, "device_size = 2048GiB: at most 1024GiB"},
		{"page-compression", []set{{"rows", "20_000_000"}}, "rows = 20000000: period = 0 gives each row its cid in 7 digits"},
		{"page-compression", []set{{"rows", "3_000_000_000"}}, "rows = 3,000,000,000: at most 2,147,483,647 (cid is an int)"},
		{"consolidation", []set{{"functions", "3"}}, "functions = 3: at least 6 (one for each kind of transaction)"},
		{"consolidation", []set{{"databases", "20000"}}, "databases = 20,000: at most 9,999"},
		{"consolidation", []set{{"duration", `"0s"`}}, "want a positive duration, got 0s"},
		{"consolidation", []set{{"size", `"1TB"`}}, "size = 976562500KiB: at most 10GiB"},
		{"tpch-parallel", []set{{"queries", `"1,99"`}}, `queries: want "all" or numbers 1-22`},
		{"tpch-parallel", []set{{"scale_factor", "1000000"}}, "scale_factor = 1e+06: at most 100000 (TPC-H's largest scale factor"},
		{"tpch-parallel", []set{{"degree", "5000"}}, "degree = 5,000: at most 1,024"},
		{"tpch-parallel", []set{{"streams", "100000"}}, "streams = 100,000: at most 1,000"},
		{"geo-replication", []set{{"rows", "1_000_000_000"}}, "rows = 1,000,000,000: at most 100,000,000"},
		{"geo-replication", []set{{"pipeline", `"lots"`}}, `pipeline "lots": want auto or a number of buffers in flight`},
		{"geo-replication", []set{{"buffer_size", "100"}}, "buffer_size = 100B: at least 1KiB"},
		{"geo-replication", []set{{"buffers", "100000"}}, "buffers = 100,000: at most 4,097"},
		{"geo-replication", []set{{"fdw_batch", "100000"}}, "fdw_batch = 100,000: at most 32,767 (postgres_fdw"},
		{"transport-oltp", []set{{"mix", `"checkout"`}}, `mix "checkout": want one of shop`},
		{"transport-oltp", []set{{"users", "1000000"}}, "users = 1,000,000: at most 100,000 (each user holds a connection"},
		{"transport-oltp", []set{{"max_in_flight", "10"}}, "max_in_flight = 10: an open-loop setting; set a rate"},
		{"transport-oltp", []set{{"rate", "5"}, {"max_in_flight", "1_000_000_000_000"}}, "max_in_flight = 1,000,000,000,000: at most 16,777,216 (the queue of arrivals is allocated whole"},
		{"transport-oltp", []set{{"rate", "1e9"}}, "rate = 1e+09: at most 10000000"},
		{"transport-oltp", []set{{"ramp_up", `"20s"`}}, "ramp_up = 20s: longer than warm_up = 10s"},
		{"transport-oltp", []set{{"duration", `"1000000h"`}}, "duration = 1000000h0m0s: at most 168h0m0s (a week"},
	} {
		b, ok := newRegistry(binDirs{}).Builtin(tt.study)
		text := b.File
		if !ok {
			t.Fatalf("no built-in study %s", tt.study)
		}
		src, line := string(text), 0
		for _, s := range tt.sets {
			src, line = setParam(t, src, s.key, s.value)
		}
		last := tt.sets[len(tt.sets)-1]
		file := "studies/" + tt.study + ".toml"
		_, err := study.Parse(file, []byte(src), reg)
		want := fmt.Sprintf("%s:%d: workload.%s: %s", file, line, last.key, tt.want)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s with %v: Parse = %v\nwant %q", tt.study, tt.sets, err, want)
		}
	}
}
