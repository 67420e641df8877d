package study

import (
	"fmt"
	"strings"
	"testing"

	"github.com/dbrig/dbrig/internal/workload"
)

func TestDiskProfilesOfAnInstance(t *testing.T) {
	t.Parallel()
	reg := NewRegistry(testEngines(), []workload.Kind{testKind()})
	spec := strings.Replace(goodSpec, `engine = "postgres"`, "engine = \"postgres\"\ndata_disk = \"san-2009\"\nwal_disk = \"${wal}\"", 1)
	spec = strings.Replace(spec, "procs = [1]", "procs = [1]\nwal = [\"none\", \"sata-hdd\"]", 1)
	p := mustPlan(t, reg, spec, "quick")
	var got []string
	for _, c := range p.Combos[:2] {
		got = append(got, c.Instances[0].DataDisk+"/"+c.Instances[0].WALDisk)
	}
	if fmt.Sprint(got) != "[san-2009/ san-2009/sata-hdd]" {
		t.Errorf("data/WAL disks = %v, want the WAL on the data's disk, then on a disk of its own", got)
	}
	// disk is every disk of the instance: the WAL shares the data's unless
	// wal_dir puts it apart, on a disk of its own.
	for _, tt := range []struct{ walDir, wantWAL string }{{"", ""}, {t.TempDir(), "nvme"}} {
		one := strings.Replace(goodSpec, `engine = "postgres"`, fmt.Sprintf("engine = \"postgres\"\ndisk = \"nvme\"\nwal_dir = %q", tt.walDir), 1)
		p := mustPlan(t, reg, one, "")
		if in := p.Combos[0].Instances[0]; in.DataDisk != "nvme" || in.WALDisk != tt.wantWAL {
			t.Errorf("disk = nvme, wal_dir = %q: data on %q, WAL on %q, want nvme and %q", tt.walDir, in.DataDisk, in.WALDisk, tt.wantWAL)
		}
	}
}

func TestBadDiskProfilesAreRefusedWithFileLineAndKey(t *testing.T) {
	t.Parallel()
	reg := NewRegistry(testEngines(), []workload.Kind{testKind()})
	for _, tt := range []struct{ add, want string }{
		{`disk = "floppy"`, `demo.toml:7: instance.0.disk: no disk profile "floppy" (dbrig has: san-2009, sata-hdd, nvme), or "none"`},
		{`wal_disk = "tape"`, `demo.toml:7: instance.0.wal_disk: no disk profile "tape"`},
		{"disk = \"nvme\"\ndata_disk = \"nvme\"", `demo.toml:8: instance.0.data_disk: disk already names the data's disk`},
	} {
		spec := strings.Replace(goodSpec, `engine = "postgres"`, "engine = \"postgres\"\n"+tt.add, 1)
		if _, err := Parse("demo.toml", []byte(spec), reg); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want %q", tt.add, err, tt.want)
		}
	}
}

func TestATargetHasNoEmulatedDisk(t *testing.T) {
	t.Parallel()
	reg := NewRegistry(testEngines(), []workload.Kind{testKind()})
	spec := strings.Replace(goodSpec, `engine = "postgres"`, "engine = \"postgres\"\ndisk = \"san-2009\"", 1)
	s, err := Parse("demo.toml", []byte(spec), reg)
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.PlanWith("", PlanOptions{Targets: map[string]string{"db": "postgres"}})
	if want := `demo.toml:7: instance.0.disk: instance "db" is --target db`; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("PlanWith(target with a disk) = %v, want %q", err, want)
	}
}
