// Package netnstest builds several hosts on this machine for tests: one
// network namespace per host, each joined to a bridge in the test's own
// namespace by a veth pair and running its own sshd on its own address
// (198.18.N.10 and up: RFC 2544's range for benchmarking networks, so no
// real host is ever addressed). Processes run in a host through ssh, as on
// a real fleet. Everything is removed when the test ends: every process
// left in a namespace is killed, the namespaces and the bridge deleted.
//
// It needs root (network namespaces), ip(8) and OpenSSH's sshd and
// ssh-keygen. Locally a test is skipped, with the reason, without them; in
// CI (CI=true) that is a failure.
package netnstest

import (
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/dbrig/dbrig/internal/doctor/sshdtest"
)

// Host is one namespace.
type Host struct {
	Netns string // the namespace's name
	Addr  string // its address on the bridge
	Veth  string // the veth end on the bridge (in the test's namespace)
	sshd  *exec.Cmd
	done  chan struct{}
}

// Target is the host as ssh reaches it: user@address.
func (h *Host) Target(user string) string { return user + "@" + h.Addr }

// Lab is the hosts and the ssh client config that reaches them.
type Lab struct {
	Hosts []*Host
	// Bridge is the bridge's name, BridgeAddr the test namespace's address
	// on it.
	Bridge, BridgeAddr string
	// ConfigFile is an ssh client config (ssh -F) with the client key and
	// the hosts' key, strict host key checking, no password.
	ConfigFile string
	User       string
	Dir        string
}

func missing(tb testing.TB, why string) {
	tb.Helper()
	if os.Getenv("CI") != "" {
		tb.Fatalf("%s: CI runs as root with ip and openssh-server installed", why)
	}
	tb.Skipf("skipped: %s", why)
}

func run(tb testing.TB, args ...string) {
	tb.Helper()
	if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
		tb.Fatalf("%s: %v: %s", strings.Join(args, " "), err, out)
	}
}

// labs counts the labs this process has started.
var labs atomic.Int64

// Start builds n hosts.
func Start(tb testing.TB, n int) *Lab {
	tb.Helper()
	sshd := requireTools(tb)
	u, err := user.Current()
	if err != nil {
		tb.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "dbrig-lab-")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { os.RemoveAll(dir) })

	// Names and a subnet of this lab's own, so that test binaries of other
	// packages, and other tests of this one, running at once do not
	// collide: the process's id and the lab's number in it.
	k := int(labs.Add(1) - 1)
	id := fmt.Sprintf("%d%c", os.Getpid()%100000, 'a'+k%26)
	subnet := fmt.Sprintf("198.18.%d", 1+(os.Getpid()+83*k)%250)
	lab := &Lab{Bridge: fmt.Sprintf("dr%sbr", id), BridgeAddr: subnet + ".1", User: u.Username, Dir: dir,
		ConfigFile: filepath.Join(dir, "ssh_config")}
	tb.Cleanup(func() { lab.teardown(tb) })
	run(tb, "ip", "link", "add", lab.Bridge, "type", "bridge")
	run(tb, "ip", "addr", "add", lab.BridgeAddr+"/24", "dev", lab.Bridge)
	run(tb, "ip", "link", "set", lab.Bridge, "up")

	hostKey := sshdtest.Keys(tb, "ssh-keygen", dir)
	var known strings.Builder
	for i := range n {
		h := lab.addHost(tb, sshd, id, subnet, i)
		fmt.Fprintf(&known, "%s %s\n", h.Addr, hostKey)
	}
	write(tb, filepath.Join(dir, "known_hosts"), known.String())
	write(tb, lab.ConfigFile, sshdtest.ClientConfig(filepath.Join(dir, "id_ed25519"), filepath.Join(dir, "known_hosts"),
		"  ServerAliveInterval 2\n  ServerAliveCountMax 3\n"))
	for _, h := range lab.Hosts {
		lab.waitSSH(tb, h)
	}
	return lab
}

// requireTools skips the test (fails it in CI) without root, ip, ssh or
// sshd, and returns sshd's path.
func requireTools(tb testing.TB) string {
	tb.Helper()
	if os.Geteuid() != 0 {
		missing(tb, "network namespaces need root")
	}
	for _, p := range []string{"ip", "ssh", "ssh-keygen"} {
		if _, err := exec.LookPath(p); err != nil {
			missing(tb, p+" not found (install iproute2 and openssh-client)")
		}
	}
	sshd := sshdtest.FindSSHD()
	if sshd == "" {
		missing(tb, "sshd not found (install openssh-server)")
	}
	if err := os.MkdirAll("/run/sshd", 0o755); err != nil {
		tb.Fatal(err)
	}
	return sshd
}

// addHost makes host i: a network namespace on the lab's bridge, with an
// sshd of its own.
func (l *Lab) addHost(tb testing.TB, sshd string, id string, subnet string, i int) *Host {
	tb.Helper()
	dir := l.Dir
	h := &Host{Netns: fmt.Sprintf("dr%sh%d", id, i), Addr: fmt.Sprintf("%s.%d", subnet, 10+i),
		Veth: fmt.Sprintf("dr%sv%d", id, i), done: make(chan struct{})}
	l.Hosts = append(l.Hosts, h)
	peer := fmt.Sprintf("dr%sp%d", id, i)
	run(tb, "ip", "netns", "add", h.Netns)
	run(tb, "ip", "link", "add", h.Veth, "type", "veth", "peer", "name", peer)
	run(tb, "ip", "link", "set", peer, "netns", h.Netns)
	run(tb, "ip", "link", "set", h.Veth, "master", l.Bridge, "up")
	run(tb, "ip", "netns", "exec", h.Netns, "ip", "link", "set", "lo", "up")
	run(tb, "ip", "netns", "exec", h.Netns, "ip", "addr", "add", h.Addr+"/24", "dev", peer)
	run(tb, "ip", "netns", "exec", h.Netns, "ip", "link", "set", peer, "up")
	cfg := filepath.Join(dir, fmt.Sprintf("sshd_config_%d", i))
	// TMPDIR passes the test's temporary directory on to what runs
	// in the host, so what it leaves there is seen.
	write(tb, cfg, sshdtest.ServerConfig(h.Addr, 22, dir, filepath.Join(dir, fmt.Sprintf("sshd_%d.pid", i)), l.User,
		"SetEnv TMPDIR="+os.TempDir()+"\n"))
	h.sshd = exec.Command("ip", "netns", "exec", h.Netns, sshd, "-D", "-f", cfg, "-E", filepath.Join(dir, fmt.Sprintf("sshd_%d.log", i)))
	h.sshd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	if err := h.sshd.Start(); err != nil {
		tb.Fatalf("start sshd in %s: %v", h.Netns, err)
	}
	go func() { _ = h.sshd.Wait(); close(h.done) }()
	return h
}

// waitSSH waits until the host's sshd answers.
func (l *Lab) waitSSH(tb testing.TB, h *Host) {
	tb.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		out, err := exec.Command("ssh", "-F", l.ConfigFile, "-o", "BatchMode=yes", "-o", "ConnectTimeout=2", h.Target(l.User), "true").CombinedOutput()
		if err == nil {
			return
		}
		select {
		case <-h.done:
			log, _ := os.ReadFile(filepath.Join(l.Dir, "sshd_0.log"))
			tb.Fatalf("sshd in %s exited: %s", h.Netns, log)
		default:
		}
		if time.Now().After(deadline) {
			tb.Fatalf("ssh to %s: %v: %s", h.Addr, err, out)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Pids lists the processes in the host's namespace.
func (h *Host) Pids() []int {
	out, _ := exec.Command("ip", "netns", "pids", h.Netns).Output()
	var pids []int
	for _, f := range strings.Fields(string(out)) {
		if n, err := strconv.Atoi(f); err == nil {
			pids = append(pids, n)
		}
	}
	return pids
}

// SSHD is the pid of the host's listening sshd.
func (h *Host) SSHD() int {
	// ip netns exec executes sshd in place, so the pid is sshd's.
	return h.sshd.Process.Pid
}

// Others lists the processes in the namespace other than the listening
// sshd, with their command lines.
func (h *Host) Others() map[int]string {
	out := map[int]string{}
	for _, p := range h.Pids() {
		if p == h.SSHD() {
			continue
		}
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", p))
		out[p] = strings.TrimSpace(strings.ReplaceAll(string(b), "\x00", " "))
	}
	return out
}

// Parent returns a process's parent pid.
func Parent(pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 2 {
		return 0
	}
	n, _ := strconv.Atoi(f[1])
	return n
}

// Limit caps the rate into the host (the bridge's side of its veth) with a
// token bucket filter (tbf; this kernel has no netem).
func (l *Lab) Limit(tb testing.TB, h *Host, rate string) {
	tb.Helper()
	run(tb, "tc", "qdisc", "replace", "dev", h.Veth, "root", "tbf", "rate", rate, "burst", "32kb", "latency", "50ms")
}

func (l *Lab) teardown(tb testing.TB) {
	for _, h := range l.Hosts {
		for _, p := range h.Pids() {
			_ = syscall.Kill(p, syscall.SIGKILL)
		}
		if h.sshd != nil && h.sshd.Process != nil {
			_ = h.sshd.Process.Kill()
			<-h.done
		}
		_ = exec.Command("ip", "netns", "del", h.Netns).Run()
		_ = exec.Command("ip", "link", "del", h.Veth).Run()
	}
	_ = exec.Command("ip", "link", "del", l.Bridge).Run()
}

func write(tb testing.TB, name, content string) {
	tb.Helper()
	if err := os.WriteFile(name, []byte(content), 0o600); err != nil {
		tb.Fatal(err)
	}
}
