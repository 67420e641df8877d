package study

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/dbrig/dbrig/internal/link"
	"github.com/dbrig/dbrig/internal/workload"
)

// A [[link]] takes every setting dbrig link's flags take, in the flags'
// words or as a number, a swept one like any other key: a study file once
// had only rtt, rate, window, jitter, loss and duplex as strings and mss as
// a whole number, and refused window = 65535.
func TestALinkTakesEverySettingAFlagTakes(t *testing.T) {
	t.Parallel()
	reg := NewRegistry(testEngines(), []workload.Kind{testKind()})
	spec := overLinksOnly(strings.Replace(goodSpec, `profile = "${net}"`, `profile = "${net}"
rtt = "6ms"
forward_delay = "5ms"
reverse_delay = "1ms"
rate = "${wire}"
window = 65535
jitter = "1ms"
loss = 0.001
duplex = "half"
mss = "${seg}"
overhead = 52
rto = "300ms"
seed = 7`, 1))
	spec = strings.Replace(spec, `mem = ["4MB"]`, `mem = ["4MB"]`+"\nwire = [\"100mbit\"]\nseg = [1536]", 1)
	s, err := Parse("demo.toml", []byte(spec), reg)
	if err != nil {
		t.Fatal(err)
	}
	p, err := s.Plan("")
	if err != nil {
		t.Fatal(err)
	}
	want := link.Config{RTT: 6 * time.Millisecond, ForwardDelay: 5 * time.Millisecond, ReverseDelay: time.Millisecond,
		Rate: 100e6, Window: link.LegacyWindow, Jitter: time.Millisecond, Loss: 0.001, Duplex: link.HalfDuplex,
		MSS: 1536, Overhead: 52, RTO: 300 * time.Millisecond, Seed: 7}
	for _, c := range p.Combos {
		if got := c.Links[0].Config; got != want {
			t.Errorf("%s: link %#v, want %#v", c.Key, got, want)
		}
	}
}

// A [[link]] setting's bad value is refused at its own line and key, in the
// words its flag is refused with; a key no setting has is an unknown key.
func TestALinkSettingIsRefusedAtItsKey(t *testing.T) {
	t.Parallel()
	reg := NewRegistry(testEngines(), []workload.Kind{testKind()})
	for _, tt := range []struct{ line, want string }{
		{`forward_delay = "1m"`, "demo.toml:15: link.0.forward_delay: forward_delay 1m0s: at most 10s"},
		{`reverse_delay = "far"`, `demo.toml:15: link.0.reverse_delay: reverse_delay: duration "far"`},
		{`overhead = 70000`, "demo.toml:15: link.0.overhead: overhead 70000: want 0 to 65535 bytes"},
		{`rto = "1h"`, "demo.toml:15: link.0.rto: rto 1h0m0s: at most 2m0s (Linux's largest retransmission timeout)"},
		{`seed = "lucky"`, `demo.toml:15: link.0.seed: seed: "lucky": want a whole number`},
		{`window = "1000"`, "demo.toml:15: link.0.window: window 1000B: smaller than one segment (mss 1448 bytes)"},
		{`loss = "100%"`, "demo.toml:15: link.0.loss: loss 100%: want a probability below 100%"},
		{`rtt = 77`, `demo.toml:15: link.0.rtt: rtt: duration "77" has no unit`},
		{`duplex = true`, "demo.toml:15: link.0.duplex: duplex: want a string in a flag's words"},
		{`colour = "red"`, "demo.toml:15: link.0.colour: unknown key"},
	} {
		spec := overLinksOnly(strings.Replace(goodSpec, `profile = "${net}"`, "profile = \"${net}\"\n"+tt.line, 1))
		_, err := Parse("demo.toml", []byte(spec), reg)
		var es SpecErrors
		if !errors.As(err, &es) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v\nwant a SpecErrors with %q", tt.line, err, tt.want)
		}
	}
}
