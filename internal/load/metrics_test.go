package load

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// gather collects the runner's metrics into a map from "name{labels}" to value.
func gather(t *testing.T, r *Runner) map[string]*dto.Metric {
	t.Helper()
	reg := prometheus.NewPedanticRegistry() // also checks the descriptions
	reg.MustRegister(r.Metrics())
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*dto.Metric{}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			key := f.GetName()
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName()+"="+l.GetValue())
			}
			if len(labels) > 0 {
				key += "{" + strings.Join(labels, ",") + "}"
			}
			out[key] = m
		}
	}
	return out
}

func TestPrometheusMetricsMatchTheRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mix := []TxType{{"read", 3}, {"write", 1}}
		var n atomic.Int64 // shared by the users
		wl := &timedWorkload{mix: mix, service: func(id, k, tx int) (time.Duration, error) {
			if n.Add(1)%5 == 0 && tx == 1 {
				return 3 * time.Millisecond, classedError(Deadlock)
			}
			return time.Duration(1+k%7) * time.Millisecond, nil
		}}
		r := newFakeClockRunner(t, Config{Users: 4, Rate: 500, WarmUp: time.Second, Duration: 3*time.Second + offset, Seed: 9}, wl)
		before := gather(t, r)
		if v := before["dbrig_load_operations_total{type=read}"].GetCounter().GetValue(); v != 0 {
			t.Errorf("before the run: %v operations", v)
		}
		res, err := r.Run(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		m := gather(t, r)
		for i, tt := range mix {
			// The live view counts every phase; the series has every phase.
			var ok, deadlocks int64
			for _, iv := range res.Series {
				ok += iv.Types[i].Ops
				deadlocks += iv.Types[i].Errors[Deadlock]
			}
			if got := m["dbrig_load_operations_total{type="+tt.Name+"}"].GetCounter().GetValue(); int64(got) != ok || ok == 0 {
				t.Errorf("%s: %v operations exposed, the series has %d", tt.Name, got, ok)
			}
			if got := m["dbrig_load_errors_total{class=deadlock,type="+tt.Name+"}"].GetCounter().GetValue(); int64(got) != deadlocks {
				t.Errorf("%s: %v deadlocks exposed, the series has %d", tt.Name, got, deadlocks)
			}
			h := m["dbrig_load_latency_seconds{type="+tt.Name+"}"].GetHistogram()
			if int64(h.GetSampleCount()) != ok {
				t.Errorf("%s: latency histogram of %d samples, want %d", tt.Name, h.GetSampleCount(), ok)
			}
			// Every latency is 1-7 ms: all of them fall in the 10 ms bucket,
			// none in the 500 µs one.
			for _, b := range h.GetBucket() {
				want := uint64(0)
				if b.GetUpperBound() >= 0.0075 {
					want = uint64(ok)
				}
				if b.GetUpperBound() <= 0.0005 || b.GetUpperBound() >= 0.01 {
					if b.GetCumulativeCount() != want {
						t.Errorf("%s: bucket le=%v holds %d, want %d", tt.Name, b.GetUpperBound(), b.GetCumulativeCount(), want)
					}
				}
			}
			if mean := h.GetSampleSum() / float64(h.GetSampleCount()); mean < 0.001 || mean > 0.007 {
				t.Errorf("%s: mean latency %v s from the histogram's sum, want 1-7 ms", tt.Name, mean)
			}
			if p := m["dbrig_load_last_second_latency_seconds{quantile=1,type="+tt.Name+"}"].GetGauge().GetValue(); p < 0.006 || p > 0.0071 {
				t.Errorf("%s: last second's max %v s, want 7 ms", tt.Name, p)
			}
		}
		if v := m["dbrig_load_users"].GetGauge().GetValue(); v != 4 {
			t.Errorf("users %v, want 4", v)
		}
		if v := m["dbrig_load_phase{phase=stopping}"].GetGauge().GetValue(); v != 1 {
			t.Errorf("phase stopping = %v after the run, want 1", v)
		}
		if v := m["dbrig_load_not_started_total"].GetCounter().GetValue(); v != 0 {
			t.Errorf("not started %v, want 0", v)
		}
	})
}

func TestServeMetricsServesUntilTheContextEnds(t *testing.T) {
	r, err := NewRunner(Config{Users: 1, Ops: 1}, &timedWorkload{service: fixedService(time.Millisecond)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	srv, err := ServeMetrics(ctx, ":0", r.Metrics())
	if err != nil {
		t.Fatal(err)
	}
	addr := srv.Addr().(*net.TCPAddr)
	if !addr.IP.IsLoopback() {
		t.Errorf("an empty host listens on %v, want loopback only", addr.IP)
	}
	if _, err := r.Run(t.Context()); err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get("http://" + addr.String() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `dbrig_load_operations_total{type="op"} 1`) {
		t.Errorf("GET /metrics: %s\n%s", resp.Status, body)
	}
	cancel()
	if err := srv.Wait(); err != nil {
		t.Errorf("Wait after the context ended: %v", err)
	}
	if c, err := net.DialTimeout("tcp", addr.String(), time.Second); err == nil {
		c.Close()
		t.Error("the server still accepts connections after its context ended")
	}
}

func TestServeMetricsRefusesABadAddress(t *testing.T) {
	for _, addr := range []string{"9090", "localhost:http-alt", "127.0.0.1:99999"} {
		if _, err := ServeMetrics(t.Context(), addr); err == nil || !strings.Contains(err.Error(), addr) {
			t.Errorf("ServeMetrics(%q) = %v, want an error naming the address", addr, err)
		}
	}
}
