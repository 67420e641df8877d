package doctor

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dbrig/dbrig/internal/term"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// fixtureFleet checks four fixtures as a fleet, with the times zeroed so the
// output is the same on every run.
func fixtureFleet(t *testing.T) *Report {
	t.Helper()
	var hosts []Host
	for _, name := range []string{"vm-loop", "half-duplex", "small-buffers", "physical"} {
		hosts = append(hosts, SnapshotHost(name+".snap", loadSnapshot(t, name)))
	}
	rep := Run(t.Context(), hosts, Options{Links: mustLinks(t, "tukwila-blueridge")})
	for i := range rep.Hosts {
		rep.Hosts[i].ElapsedMS = 0
	}
	return rep
}

func TestTextReportGolden(t *testing.T) {
	rep := fixtureFleet(t)
	var buf bytes.Buffer
	if err := WriteText(&buf, rep, term.Style{}); err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "fleet.golden")
	if *update {
		if err := os.WriteFile(golden, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test -run TestTextReportGolden -update to create it)", err)
	}
	if got := buf.String(); got != string(want) {
		t.Errorf("text report differs from %s (rerun with -update if the change is intended):\n%s", golden, got)
	}
	if strings.Contains(buf.String(), "\x1b[") {
		t.Error("colour escapes without a terminal")
	}

	var col bytes.Buffer
	if err := WriteText(&col, rep, term.Style{Enabled: true}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(col.String(), "\x1b[31mFAIL") || !strings.Contains(col.String(), "\x1b[33mWARN") {
		t.Error("no colour with colour enabled")
	}
}

func TestJSONReport(t *testing.T) {
	rep := fixtureFleet(t)
	var buf bytes.Buffer
	if err := WriteJSON(&buf, rep); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Schema   string `json:"schema"`
		Status   string `json:"status"`
		ExitCode int    `json:"exit_code"`
		Links    []struct {
			Spec     string  `json:"spec"`
			RTTMS    float64 `json:"rtt_ms"`
			RateBps  float64 `json:"rate_bps"`
			BDPBytes float64 `json:"bdp_bytes"`
		} `json:"links"`
		Hosts []struct {
			Host   string `json:"host"`
			Status string `json:"status"`
			Checks []struct {
				ID, Section, Subject, Status, Observed, Expected, Why, Source, Fix string
				Values                                                             map[string]any
			} `json:"checks"`
		} `json:"hosts"`
		Fleet struct {
			ByCheck []struct {
				ID       string   `json:"id"`
				FailedOn []string `json:"failed_on"`
			} `json:"by_check"`
		} `json:"fleet"`
	}
	if err := json.Unmarshal(buf.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if got.Schema != SchemaVersion || got.Status != "fail" || got.ExitCode != 1 || len(got.Hosts) != 4 {
		t.Fatalf("report %+v", got)
	}
	if l := got.Links[0]; l.Spec != "tukwila-blueridge" || l.RTTMS != 77 || l.RateBps != 1e9 || l.BDPBytes != 9.625e6 {
		t.Errorf("link %+v", l)
	}
	c := got.Hosts[0].Checks[0]
	if c.ID != "disk.alignment" || c.Section != "disks" || c.Subject != "loop0p1" || c.Status != "fail" || c.Values["start_bytes"] != 32256.0 {
		t.Errorf("first check %+v", c)
	}
	if bc := got.Fleet.ByCheck[0]; bc.ID != "disk.alignment" || strings.Join(bc.FailedOn, ",") != "vm-loop.snap,physical.snap" {
		t.Errorf("fleet by check %+v", got.Fleet.ByCheck)
	}
}
