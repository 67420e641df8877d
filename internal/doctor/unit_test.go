package doctor

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dbrig/dbrig/internal/units"
)

func TestJudgeAlignment(t *testing.T) {
	tests := []struct {
		name                          string
		offset, phys, minIO, opt, dev int64
		want                          Status
		words                         string
	}{
		{"Windows 2003 sector 63", 63 * 512, 512, 512, 0, 0, Fail, "not 4 KiB-aligned"},
		{"sector 63 on a 4K drive", 63 * 512, 4096, 4096, 0, 0, Fail, "not 4 KiB-aligned"},
		{"sector 63 on a 512e drive jumpered (alignment_offset 3584)", 63 * 512, 4096, 4096, 0, 3584, Warn, "4 KiB-aligned, not 64 KiB"},
		{"1 MiB", 2048 * 512, 4096, 4096, 0, 0, Pass, "1 MiB-aligned"},
		{"64 KiB", 128 * 512, 512, 512, 0, 0, Pass, "64 KiB-aligned, not 1 MiB"},
		{"4 KiB only", 2056 * 512, 4096, 4096, 0, 0, Warn, "4 KiB-aligned, not 64 KiB"},
		{"4 KiB only, 64 KiB stripe reported", 2056 * 512, 4096, 4096, 65536, 0, Fail, "64 KiB optimal I/O size"},
		{"1 MiB, 768 KiB stripe (3 x 256 KiB)", 2048 * 512, 4096, 262144, 786432, 0, Fail, "768 KiB optimal I/O size"},
		{"3 MiB, 768 KiB stripe", 6144 * 512, 4096, 262144, 786432, 0, Pass, "1 MiB-aligned"},
		{"1 MiB, 8 KiB physical", 2048 * 512, 8192, 8192, 0, 0, Pass, "1 MiB-aligned"},
		{"whole device", 0, 4096, 4096, 0, 0, Pass, "1 MiB-aligned"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := judgeAlignment(tt.offset, tt.phys, tt.minIO, tt.opt, tt.dev)
			if got := a.status(); got != tt.want {
				t.Errorf("status %s, want %s (%+v)", got, tt.want, a)
			}
			if d := a.describe(); !strings.Contains(d, tt.words) {
				t.Errorf("describe %q lacks %q", d, tt.words)
			}
		})
	}
	if e := judgeAlignment(0, 4096, 262144, 786432, 0).expected(); e != "start a multiple of 64 KiB and 256 KiB and 768 KiB (1 MiB best)" {
		t.Errorf("expected %q", e)
	}
}

func TestParseLink(t *testing.T) {
	tests := []struct {
		spec string
		rtt  time.Duration
		rate units.Rate
		err  string
	}{
		{spec: "150ms:1gbit", rtt: 150 * time.Millisecond, rate: units.Gbit},
		{spec: "tukwila-dublin:1gbit", rtt: 150 * time.Millisecond, rate: units.Gbit},
		{spec: "tukwila-dublin", rtt: 150 * time.Millisecond, rate: units.Gbit},
		{spec: "dublin-tukwila:100mbit", rtt: 150 * time.Millisecond, rate: 100 * units.Mbit},
		{spec: "tukwila-blueridge+legacy-window", rtt: 77 * time.Millisecond, rate: units.Gbit},
		{spec: "rtt-23ms:10gbit", rtt: 23 * time.Millisecond, rate: 10 * units.Gbit},
		{spec: "0.2ms:10gbit", rtt: 200 * time.Microsecond, rate: 10 * units.Gbit},
		{spec: "77ms:10gigabit", rtt: 77 * time.Millisecond, rate: 10 * units.Gbit},
		{spec: "77 ms:10 gigabits", rtt: 77 * time.Millisecond, rate: 10 * units.Gbit},
		{spec: "200µs:10 Gbps", rtt: 200 * time.Microsecond, rate: 10 * units.Gbit},
		{spec: "tukwila-dublin:10GbE", rtt: 150 * time.Millisecond, rate: 10 * units.Gbit},
		{spec: "77ms:1g", rtt: 77 * time.Millisecond, rate: units.Gbit},
		{spec: "nowhere:1gbit", err: `unknown link profile "nowhere"`},
		{spec: "tukwila-mars", err: `unknown link profile "tukwila-mars"`},
		{spec: "150ms", err: "needs a rate too"},
		{spec: "150ms:", err: "empty rate"},
		{spec: "150ms:fast", err: `rate "fast": want a number and a unit in bits per second`},
		{spec: "77ms:10gigaflops", err: `unknown unit "gigaflops"`},
		{spec: "150:1gbit", err: `duration "150" has no unit`},
		{spec: "0ms:1gbit", err: "must be above zero"},
		{spec: "150ms:0", err: "rate must be above zero"},
		{spec: "loopback", err: "has no delay"},
		{spec: "", err: "empty --link"},
	}
	for _, tt := range tests {
		l, err := ParseLink(tt.spec)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("ParseLink(%q) error %v, want %q", tt.spec, err, tt.err)
			}
			continue
		}
		if err != nil || l.RTT != tt.rtt || l.Rate != tt.rate {
			t.Errorf("ParseLink(%q) = %v %v %v, want %v %v", tt.spec, l.RTT, l.Rate, err, tt.rtt, tt.rate)
		}
	}
	l, _ := ParseLink("100ms:1gbit")
	if l.BDP() != 12.5e6 {
		t.Errorf("BDP %v, want 12.5 MB", l.BDP())
	}
}

func TestTCPCeilings(t *testing.T) {
	base := tcpSettings{known: true, rmem: [3]int64{4096, 131072, 6 << 20}, wmem: [3]int64{4096, 16384, 4 << 20},
		rmemMax: 212992, wmemMax: 212992, windowScaling: 1, moderateRcvbuf: 1}
	// Seed 000: a 65,535-byte window at 100 ms is about 5.24 Mbit/s.
	noScaling := base
	noScaling.windowScaling = 0
	recv, _ := noScaling.maxWindows()
	if got := recv * 8 / 0.1; got < 5.2e6 || got > 5.25e6 {
		t.Errorf("no window scaling at 100 ms: %v bit/s, want 5.24 Mbit/s", got)
	}
	h := &host{tcp: noScaling}
	res := checkTCP(h, mustLinks(t, "100ms:1gbit"))
	if res[0].Status != Fail || res[1].Status != Fail || !strings.Contains(res[1].Fix, "tcp_window_scaling=1") {
		t.Errorf("no window scaling: %+v", res)
	}
	noAuto := base
	noAuto.moderateRcvbuf = 0
	res = checkTCP(&host{tcp: noAuto}, mustLinks(t, "20ms:1gbit"))
	if res[0].Status != Warn || res[1].Status != Fail || !strings.Contains(res[1].Fix, "tcp_moderate_rcvbuf=1") {
		t.Errorf("no autotuning: %+v", res)
	}
	// Windows of 3 MiB (receive) and 2 MiB (send): 15 ms at 1 Gbit/s needs
	// 1.875 MB and passes; 20 ms needs 2.5 MB and the send side fails.
	res = checkTCP(&host{tcp: base}, mustLinks(t, "15ms:1gbit", "20ms:1gbit"))
	if res[1].Status != Pass || res[2].Status != Fail || !strings.Contains(res[2].Fix, "tcp_wmem='4096 16384 5242880'") ||
		strings.Contains(res[2].Fix, "tcp_rmem") {
		t.Errorf("6/4 MiB buffers: %+v", res[1:])
	}
	res = checkTCP(&host{tcp: tcpSettings{}}, nil)
	if len(res) != 1 || res[0].Status != Skip {
		t.Errorf("unknown settings: %+v", res)
	}
}

func TestParseTarget(t *testing.T) {
	tests := []struct {
		in, want, err string
	}{
		{in: "db1", want: "db1"},
		{in: "root@db1.example.com:2222", want: "root@db1.example.com:2222"},
		{in: "postgres@10.0.0.5", want: "postgres@10.0.0.5"},
		{in: "[::1]:22", want: "[::1]:22"},
		{in: "admin@[fe80::1]", want: "admin@[fe80::1]"},
		{in: "fe80::1", want: "[fe80::1]"},
		{in: "-oProxyCommand=touch /tmp/x", err: "want a host name"},
		{in: "root@-p", err: "want a host name"},
		{in: "-l@host", err: `user "-l"`},
		{in: "db1:ssh", err: `port "ssh"`},
		{in: "db1:70000", err: `port "70000"`},
		{in: "db1:", err: `port ""`},
		{in: "@db1", err: `user ""`},
		{in: "[10.0.0.1]:22", err: "not an IPv6 address"},
		{in: "[::1]:", err: "want [address]:port"},
		{in: "a:b:c", err: "not an IPv6 address"},
		{in: "db$1", err: "want a host name"},
	}
	for _, tt := range tests {
		got, err := ParseTarget(tt.in)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("ParseTarget(%q) = %v, %v; want error %q", tt.in, got, err, tt.err)
			}
			continue
		}
		if err != nil || got.String() != tt.want {
			t.Errorf("ParseTarget(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}

func TestReadHostsFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("good.txt", "# the fleet\n\nroot@db1:22   # primary\n  db2\n[::1]:2222\n")
	got, err := ReadHostsFile(good)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, h := range got {
		names = append(names, h.String())
	}
	if strings.Join(names, " ") != "root@db1:22 db2 [::1]:2222" {
		t.Errorf("hosts %v", names)
	}

	bad := write("bad.txt", "db1\nthis is not a host\ndb2:port\ndb1\n")
	_, err = ReadHostsFile(bad)
	for _, want := range []string{bad + ":2:", "want one host per line", bad + `:3: port "port"`, bad + ":4: db1 is already on line 1"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v lacks %q", err, want)
		}
	}
	if _, err := ReadHostsFile(write("empty.txt", "# nobody\n")); err == nil || !strings.Contains(err.Error(), "lists no host") {
		t.Errorf("empty file: %v", err)
	}
	if _, err := ReadHostsFile(filepath.Join(dir, "missing.txt")); err == nil || !strings.Contains(err.Error(), "no such file") {
		t.Errorf("missing file: %v", err)
	}
}

func TestParseEthtool(t *testing.T) {
	out := `Settings for eth1:
	Supported ports: [ TP ]
	Supported link modes:   10baseT/Half 10baseT/Full
	                        100baseT/Half 100baseT/Full
	                        1000baseT/Full
	Advertised link modes:  10baseT/Half 10baseT/Full
	                        100baseT/Half 100baseT/Full
	                        1000baseT/Full
	Link partner advertised link modes:  10baseT/Half 10baseT/Full
	                                     100baseT/Half 100baseT/Full
	                                     1000baseT/Full
	Speed: 100Mb/s
	Duplex: Full
	Auto-negotiation: on
	Link detected: yes
`
	e := parseEthtool(out)
	if e.autoneg != "on" || len(e.supported) != 5 || bestFull(e.partner) != 1000 {
		t.Fatalf("parsed %+v", e)
	}
	// A gigabit link that came up at 100 Mb/s (a damaged pair) warns.
	r := checkLink(iface{name: "eth1", mtu: 1500, carrier: 1, speed: 100, duplex: "full", driver: "igb", ethtool: e})
	if r.Status != Warn || !strings.Contains(r.Observed, "both ends support 1000 Mb/s") {
		t.Errorf("slow link: %+v", r)
	}
	// Half duplex while the partner offers full: a mismatch.
	r = checkLink(iface{name: "eth1", mtu: 1500, carrier: 1, speed: 100, duplex: "half", driver: "igb", ethtool: e})
	if r.Status != Fail || !strings.Contains(r.Observed, "duplex mismatch") {
		t.Errorf("half duplex: %+v", r)
	}
	// No carrier: nothing to judge.
	if r := checkLink(iface{name: "eth2", carrier: 0, duplex: "half"}); r.Status != Info {
		t.Errorf("down link: %+v", r)
	}
	if r := checkMTU([]iface{{name: "eth0", mtu: 9000}, {name: "eth1", mtu: 1500}}); r.Status != Warn {
		t.Errorf("mixed MTU: %+v", r)
	}
}

func TestParseSnapshot(t *testing.T) {
	ok := "Welcome to db1\n@dbrig-doctor 1\n@F proc/sys/kernel/hostname\n|db1\n@L sys/block/sda ../devices/pci/sda\n@E sys/class/dmi/id/product_serial\n@C ethtool eth0\n|Speed: 1000Mb/s\n@end\n"
	s, err := ParseSnapshot(strings.NewReader(ok))
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := s.ReadFile("proc/sys/kernel/hostname"); string(b) != "db1\n" {
		t.Errorf("hostname %q", b)
	}
	if l, _ := s.ReadLink("sys/block/sda"); l != "../devices/pci/sda" {
		t.Errorf("link %q", l)
	}
	if names, _ := s.ReadDir("sys/block"); strings.Join(names, ",") != "sda" {
		t.Errorf("ReadDir %v", names)
	}
	if _, err := s.ReadFile("sys/class/dmi/id/product_serial"); err == nil {
		t.Error("unreadable file read")
	}
	if out, err := s.Command("ethtool", "eth0"); err != nil || !strings.Contains(out, "1000Mb/s") {
		t.Errorf("ethtool %q %v", out, err)
	}
	for in, want := range map[string]string{
		"":                                   "not a dbrig doctor snapshot",
		"@dbrig-doctor 1\n@F a\n|x\n":        "ends before the collector's @end",
		"@dbrig-doctor 1\n|x\n@end\n":        "content outside a file",
		"@dbrig-doctor 1\n@F /etc/x\n@end\n": "want a clean relative path",
		"@dbrig-doctor 1\n@F ../x\n@end\n":   "want a clean relative path",
		"@dbrig-doctor 1\n@Q x\n@end\n":      "unknown entry",
	} {
		if _, err := ParseSnapshot(strings.NewReader(in)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseSnapshot(%q) error %v, want %q", in, err, want)
		}
	}
}

func TestDatabaseSettingChecks(t *testing.T) {
	s := pgSettings{
		"wal_level": {"replica", ""}, "max_wal_senders": {"0", ""}, "max_replication_slots": {"10", ""},
		"superuser_reserved_connections": {"0", ""}, "max_connections": {"100", ""},
	}
	got := map[string]Result{}
	for _, r := range checkReplication(s) {
		got[r.ID] = r
	}
	if r := got["db.wal_level"]; r.Status != Warn || !strings.Contains(r.Fix, "wal_level = logical") {
		t.Errorf("wal_level: %+v", r)
	}
	if got["db.max_wal_senders"].Status != Fail || got["db.max_replication_slots"].Status != Pass || got["db.superuser_reserved_connections"].Status != Fail {
		t.Errorf("replication rows: %+v", got)
	}
	s["wal_level"] = setting{"minimal", ""}
	if r := checkReplication(s)[0]; r.Status != Fail {
		t.Errorf("minimal: %+v", r)
	}

	h := &host{memTotal: 64 << 30, cpu: cpuInfo{count: 16}, tcp: tcpSettings{keepaliveTime: 7200, keepaliveIntvl: 75, keepaliveProbes: 9}}
	r := pgSettings{
		"max_parallel_workers_per_gather": {"0", ""}, "max_parallel_workers": {"8", ""},
		"shared_buffers": {"16384", "8kB"}, "effective_io_concurrency": {"1", ""},
		"synchronous_commit": {"off", ""}, "tcp_keepalives_idle": {"0", "s"},
	}
	got = map[string]Result{}
	for _, x := range checkResources(r, h) {
		got[x.ID] = x
	}
	if x := got["db.shared_buffers"]; x.Status != Warn || !strings.Contains(x.Observed, "128 MiB") || !strings.Contains(x.Fix, "shared_buffers = '16GB'") {
		t.Errorf("shared_buffers: %+v", x)
	}
	if x := got["db.max_parallel_workers_per_gather"]; x.Status != Warn {
		t.Errorf("parallel: %+v", x)
	}
	if x := got["db.synchronous_commit"]; x.Status != Warn {
		t.Errorf("synchronous_commit: %+v", x)
	}
	if x := got["db.tcp_keepalives"]; x.Status != Warn || !strings.Contains(x.Observed, "2h11m15s") {
		t.Errorf("keepalives: %+v", x)
	}
	if x := got["db.effective_io_concurrency"]; x.Status != Pass {
		t.Errorf("effective_io_concurrency (disk unknown): %+v", x)
	}
}

func TestCatalogIsComplete(t *testing.T) {
	seen := map[string]bool{}
	for _, c := range Catalog {
		if seen[c.ID] {
			t.Errorf("%s twice", c.ID)
		}
		seen[c.ID] = true
		if c.Why == "" || c.Source == "" || c.Title == "" || c.Section == "" {
			t.Errorf("%s: incomplete entry %+v", c.ID, c)
		}
	}
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "doctor.md"))
	if err != nil {
		t.Fatalf("docs/doctor.md: %v", err)
	}
	for _, c := range Catalog {
		if !strings.Contains(string(doc), "`"+c.ID+"`") {
			t.Errorf("docs/doctor.md does not describe %s", c.ID)
		}
	}
}

// TestIdleCheck: a guest whose haltpoll driver never polls is warned about
// (each wake-up of an idle vCPU is a VM exit), one that polls passes, and
// other drivers are said as they are.
func TestIdleCheck(t *testing.T) {
	for _, tc := range []struct {
		name string
		c    cpuInfo
		want Status
		obs  string
	}{
		{"no cpuidle", cpuInfo{idle: CPUIdle{HaltPollNs: -1}}, Skip, "no cpuidle interface"},
		{"haltpoll that never polls", cpuInfo{idle: CPUIdle{Driver: "haltpoll", Governor: "haltpoll", HaltPollNs: 0}}, Warn, "halts at once"},
		{"haltpoll polling 200 µs", cpuInfo{idle: CPUIdle{Driver: "haltpoll", Governor: "haltpoll", HaltPollNs: 200000}}, Pass, "polls up to 200 µs"},
		{"haltpoll, parameters unreadable", cpuInfo{idle: CPUIdle{Driver: "haltpoll", HaltPollNs: -1}}, Info, "cpuidle driver haltpoll"},
		{"a physical host's driver", cpuInfo{idle: CPUIdle{Driver: "intel_idle", Governor: "menu", HaltPollNs: -1}}, Info, "intel_idle, governor menu"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := checkIdle(tc.c)
			if r.Status != tc.want || !strings.Contains(r.Observed, tc.obs) {
				t.Errorf("status %s, observed %q; want %s with %q", r.Status, r.Observed, tc.want, tc.obs)
			}
			if r.Status == Warn && r.Fix == "" {
				t.Error("a warning without a fix")
			}
		})
	}
}
