package study

import (
	"errors"
	"testing"
	"time"

	"github.com/dbrig/dbrig/internal/workload"
)

// A load's link is a study's [[link]] between the users' own site and the
// server's: several profiles are a point each, crossed with the swept
// parameter, the settings override each profile, settings alone go over a
// link that changes nothing, and a bad setting is refused at its key.
func TestALoadsLinkIsAStudysLink(t *testing.T) {
	t.Parallel()
	reg := NewRegistry(testEngines(), []workload.Kind{loadKind()})
	spec, err := ParseLoad(LoadRequest{Kind: loadKind(), Engine: "postgres", Sweep: []any{int64(10), int64(20)},
		Link: &LoadLink{Profiles: []string{"lan-1g", "unix", "rtt-5ms"}}}, reg)
	if err != nil {
		t.Fatal(err)
	}
	plan, err := spec.Plan("")
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.Points()) != 6 {
		t.Fatalf("%d points, want 3 links × 2 rows", len(plan.Points()))
	}
	modes := map[string]string{}
	for _, c := range plan.Combos {
		if c.Client.Site != "client" || len(c.Links) != 1 || c.Links[0].Between != [2]string{"client", "db"} {
			t.Fatalf("combo %v: client %q, links %+v", c.Values, c.Client.Site, c.Links)
		}
		modes[c.Links[0].Profile] = c.Links[0].Mode
	}
	if modes["lan-1g"] != "link" || modes["unix"] != "unix" || modes["rtt-5ms"] != "link" {
		t.Errorf("modes by profile: %v", modes)
	}

	spec, err = ParseLoad(LoadRequest{Kind: loadKind(), Engine: "postgres", Sweep: []any{int64(10)}, Link: &LoadLink{Settings: map[string]any{"rtt": "20ms"}}}, reg)
	if err != nil {
		t.Fatal(err)
	}
	plan, err = spec.Plan("")
	if err != nil {
		t.Fatal(err)
	}
	if l := plan.Combos[0].Links; len(l) != 1 || l[0].Mode != "link" || l[0].Config.RTT != 20*time.Millisecond {
		t.Errorf("--rtt 20ms alone: links %+v", l)
	}

	_, err = ParseLoad(LoadRequest{Kind: loadKind(), Engine: "postgres", Sweep: []any{int64(10)}, Link: &LoadLink{Profiles: []string{"lan-1g"}, Settings: map[string]any{"rtt": "50s"}}}, reg)
	var es SpecErrors
	if !errors.As(err, &es) || len(es) != 1 || es[0].Key != "link.0.rtt" {
		t.Errorf("rtt 50s: %v, want one error at link.0.rtt", err)
	}
}
