package doctor

import (
	"context"
	"maps"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// loadSnapshot reads testdata/NAME.snap.
func loadSnapshot(t testing.TB, name string) *Snapshot {
	t.Helper()
	s, err := ReadSnapshotFile(filepath.Join("testdata", name+".snap"))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// checkSource runs every host check on one source.
func checkSource(t testing.TB, src Source, links []Link) HostReport {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rep := Run(ctx, []Host{{Name: "test", collect: func(context.Context, time.Duration) (Source, error) { return src, nil }}}, Options{Links: links})
	return rep.Hosts[0]
}

func mustLinks(t testing.TB, specs ...string) []Link {
	t.Helper()
	var out []Link
	for _, s := range specs {
		l, err := ParseLink(s)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, l)
	}
	return out
}

// statuses maps "id subject" to the status of each row.
func statuses(h HostReport) map[string]Status {
	m := map[string]Status{}
	for _, r := range h.Checks {
		m[strings.TrimSpace(r.ID+" "+r.Subject)] = r.Status
	}
	return m
}

func find(t testing.TB, h HostReport, id, subject string) Result {
	t.Helper()
	for _, r := range h.Checks {
		if r.ID == id && r.Subject == subject {
			return r
		}
	}
	t.Fatalf("no row %s %q in %v", id, subject, statuses(h))
	return Result{}
}

// vmBase is what every capture of this VM shows, before the edits.
var vmBase = map[string]Status{
	"disk.alignment vda": Pass,
	"net.link eth0":      Info, // virtio: no speed or duplex
	"net.mtu":            Pass,
	"tcp.buffers":        Pass,
	"cpu.model":          Info,
	"cpu.governor":       Skip, // no cpufreq in the VM
	"cpu.virtual":        Info,
	"clock.source":       Pass,
	"cpu.idle":           Skip, // captured before the collector read cpuidle
}

func with(base map[string]Status, kv ...any) map[string]Status {
	m := map[string]Status{}
	for k, v := range base {
		m[k] = v
	}
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] == nil {
			delete(m, kv[i].(string))
			continue
		}
		m[kv[i].(string)] = kv[i+1].(Status)
	}
	return m
}

func TestFixtures(t *testing.T) {
	tests := []struct {
		fixture string
		links   []string
		want    map[string]Status
		// check looks at the details of the rows that matter.
		check func(t *testing.T, h HostReport)
	}{
		{fixture: "vm", want: with(vmBase, "tcp.bdp", Info)},
		{
			fixture: "vm", links: []string{"tukwila-dublin", "0.2ms:1gbit", "150ms:100mbit"},
			want: with(vmBase, "tcp.bdp tukwila-dublin", Fail, "tcp.bdp 0.2ms:1gbit", Pass, "tcp.bdp 150ms:100mbit", Pass),
			check: func(t *testing.T, h HostReport) {
				// 32 MiB receive and 4 MiB send buffers, half of each a window,
				// over 150 ms: 895 and 112 Mbit/s against 1 Gbit/s.
				r := find(t, h, "tcp.bdp", "tukwila-dublin")
				for _, s := range []string{"BDP 18.8 MB", "895 Mbit/s receiving", "112 Mbit/s sending"} {
					if !strings.Contains(r.Observed, s) {
						t.Errorf("observed %q lacks %q", r.Observed, s)
					}
				}
				for _, s := range []string{"net.ipv4.tcp_rmem='4096 131072 37748736'", "net.ipv4.tcp_wmem='4096 16384 37748736'"} {
					if !strings.Contains(r.Fix, s) {
						t.Errorf("fix %q lacks %q", r.Fix, s)
					}
				}
			},
		},
		{
			fixture: "vm-haltpoll",
			want:    with(vmBase, "tcp.bdp", Info, "cpu.idle", Warn),
			check: func(t *testing.T, h HostReport) {
				r := find(t, h, "cpu.idle", "")
				if r.Values["guest_halt_poll_ns"] != int64(0) || r.Values["driver"] != "haltpoll" {
					t.Errorf("cpu.idle values %v", r.Values)
				}
				if !strings.Contains(r.Observed, "halts at once") || !strings.Contains(r.Fix, "guest_halt_poll_ns") {
					t.Errorf("cpu.idle: observed %q, fix %q", r.Observed, r.Fix)
				}
			},
		},
		{
			fixture: "vm-loop",
			want:    with(vmBase, "tcp.bdp", Info, "disk.alignment loop0p1", Fail, "disk.alignment loop0p2", Pass),
			check: func(t *testing.T, h HostReport) {
				r := find(t, h, "disk.alignment", "loop0p1")
				if r.Values["start_bytes"] != int64(32256) || r.Values["aligned_4k"] != false {
					t.Errorf("loop0p1 values %v", r.Values)
				}
				if !strings.Contains(r.Observed, "32256 B") || !strings.Contains(r.Fix, "sector 2048") {
					t.Errorf("loop0p1: observed %q, fix %q", r.Observed, r.Fix)
				}
				if v := find(t, h, "disk.alignment", "loop0p2").Values["start_bytes"]; v != int64(1<<20) {
					t.Errorf("loop0p2 start %v", v)
				}
			},
		},
		{
			fixture: "half-duplex",
			want:    with(vmBase, "tcp.bdp", Info, "net.link eth0", Fail),
			check: func(t *testing.T, h HostReport) {
				r := find(t, h, "net.link", "eth0")
				for _, s := range []string{"100 Mb/s", "half duplex", "driver e1000e", "autonegotiation off"} {
					if !strings.Contains(r.Observed, s) {
						t.Errorf("observed %q lacks %q", r.Observed, s)
					}
				}
				if !strings.Contains(r.Fix, "ethtool -s eth0") || !strings.Contains(r.Why, "800 tps") {
					t.Errorf("fix %q / why %q", r.Fix, r.Why)
				}
			},
		},
		{
			fixture: "small-buffers", links: []string{"0.2ms:1gbit", "1ms:1gbit", "tukwila-blueridge"},
			want: with(vmBase, "tcp.bdp 0.2ms:1gbit", Pass, "tcp.bdp 1ms:1gbit", Fail, "tcp.bdp tukwila-blueridge", Fail),
			check: func(t *testing.T, h HostReport) {
				r := find(t, h, "tcp.bdp", "tukwila-blueridge")
				// 64 KiB buffers: a 32 KiB window per 77 ms is 3.4 Mbit/s.
				if !strings.Contains(r.Observed, "3.4 Mbit/s receiving") {
					t.Errorf("observed %q", r.Observed)
				}
				if !strings.Contains(r.Fix, "net.ipv4.tcp_rmem='4096 65536 19922944'") || !strings.Contains(r.Fix, "net.core.rmem_max") {
					t.Errorf("fix %q", r.Fix)
				}
			},
		},
		{
			fixture: "physical",
			want: with(vmBase, "tcp.bdp", Info, "disk.alignment loop0p1", Fail, "disk.alignment loop0p2", Pass,
				"cpu.governor", Warn, "cpu.virtual", Pass, "clock.source", Warn),
			check: func(t *testing.T, h HostReport) {
				if r := find(t, h, "disk.alignment", "loop0p1"); !strings.Contains(r.Observed, "64 KiB optimal I/O size") {
					t.Errorf("loop0p1 observed %q", r.Observed)
				}
				if r := find(t, h, "cpu.model", ""); !strings.Contains(r.Observed, "max 3.70 GHz") {
					t.Errorf("cpu.model %q", r.Observed)
				}
				if r := find(t, h, "clock.source", ""); !strings.Contains(r.Fix, "echo tsc") {
					t.Errorf("clock fix %q", r.Fix)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.fixture+"/"+strings.Join(tt.links, ","), func(t *testing.T) {
			h := checkSource(t, loadSnapshot(t, tt.fixture), mustLinks(t, tt.links...))
			got := statuses(h)
			for k, want := range tt.want {
				if got[k] != want {
					t.Errorf("%s: status %q, want %q", k, got[k], want)
				}
			}
			for k := range got {
				if _, ok := tt.want[k]; !ok {
					t.Errorf("unexpected row %s (%s)", k, got[k])
				}
			}
			for _, r := range h.Checks {
				if (r.Status == Fail || r.Status == Warn) && (r.Fix == "" || r.Expected == "") {
					t.Errorf("%s %s is %s without a fix or an expected value", r.ID, r.Subject, r.Status)
				}
				if r.Why == "" || r.Source == "" {
					t.Errorf("%s has no why or source", r.ID)
				}
			}
			if tt.check != nil {
				tt.check(t, h)
			}
		})
	}
}

// materialize writes a snapshot out as a directory tree, its symbolic links
// included, so that DirSource and the collector script can read it.
func materialize(t testing.TB, s *Snapshot, dir string) {
	t.Helper()
	links := slices.Collect(maps.Keys(s.links))
	// resolve follows the snapshot's links in p's parent directories.
	resolve := func(p string) string {
		for changed := true; changed; {
			changed = false
			for _, l := range links {
				if rest, ok := strings.CutPrefix(p, l+"/"); ok {
					p = path.Join(path.Dir(l), s.links[l], rest)
					changed = true
				}
			}
		}
		if err := validPath(p); err != nil {
			t.Fatalf("link leads out of the tree: %v", err)
		}
		return p
	}
	for p, content := range s.files {
		full := filepath.Join(dir, resolve(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, l := range links {
		full := filepath.Join(dir, resolve(path.Dir(l)), path.Base(l))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(s.links[l], full); err != nil {
			t.Fatal(err)
		}
	}
}

// runCollector runs the collector script with DBRIG_ROOT=root and parses it.
func runCollector(t testing.TB, root string) *Snapshot {
	t.Helper()
	cmd := exec.Command("sh", "-s")
	cmd.Stdin = strings.NewReader(CollectorScript)
	cmd.Env = append(os.Environ(), "DBRIG_ROOT="+root)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("collector: %v", err)
	}
	s, err := ParseSnapshot(strings.NewReader(string(out)))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

type row struct {
	ID, Subject, Observed string
	Status                Status
}

func rows(h HostReport, skipObserved ...string) []row {
	var out []row
	for _, r := range h.Checks {
		obs := r.Observed
		if slices.Contains(skipObserved, r.ID) {
			obs = "(not compared)"
		}
		out = append(out, row{r.ID, r.Subject, obs, r.Status})
	}
	return out
}

func sameRows(t testing.TB, what string, got, want []row) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Errorf("%s differ:\n got  %v\n want %v", what, got, want)
	}
}

// TestSnapshotDirAndCollectorAgree reads every fixture three ways: as a
// snapshot, as a directory tree through DirSource, and through the collector
// script run on that tree. The checks must see the same host each time, so
// the script collects everything the Go readers read.
func TestSnapshotDirAndCollectorAgree(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh")
	}
	links := mustLinks(t, "tukwila-dublin", "1ms:10gbit")
	for _, name := range []string{"vm", "vm-loop", "half-duplex", "small-buffers", "physical"} {
		t.Run(name, func(t *testing.T) {
			snap := loadSnapshot(t, name)
			noCmd := *snap
			noCmd.commands = nil // a directory tree has no ethtool output
			dir := t.TempDir()
			materialize(t, snap, dir)
			want := rows(checkSource(t, &noCmd, links))
			sameRows(t, "DirSource and snapshot", rows(checkSource(t, DirSource{Root: dir}, links)), want)
			sameRows(t, "collector and snapshot", rows(checkSource(t, runCollector(t, dir), links)), want)
		})
	}
}

// TestLocalCollectorAgrees runs the collector script on this machine, as a
// remote host would, and checks the result equals reading / directly.
func TestLocalCollectorAgrees(t *testing.T) {
	links := mustLinks(t, "tukwila-dublin")
	direct := checkSource(t, DirSource{Root: "/"}, links)
	viaScript := checkSource(t, runCollector(t, "/"), links)
	// The current clock speed (cpu MHz) moves between two reads.
	sameRows(t, "collector on / and DirSource{/}", rows(viaScript, "cpu.model"), rows(direct, "cpu.model"))
	for _, sec := range []Section{SectionDisks, SectionNetwork, SectionTCP, SectionCPU} {
		if !slices.ContainsFunc(direct.Checks, func(r Result) bool { return r.Section == sec }) {
			t.Errorf("no %s checks on this machine", sec)
		}
	}
}
