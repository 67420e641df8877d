// Package sshdtest starts a real OpenSSH server on a loopback port for
// tests, with a generated host key and a generated client key, and writes an
// ssh client config that reaches it without touching ~/.ssh. Locally a test
// is skipped, with the reason, when sshd is not installed (Debian package
// openssh-server); in CI (CI=true) that is a failure.
package sshdtest

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Server is a running sshd that accepts the generated client key for the
// current user.
type Server struct {
	// Port is the loopback port sshd listens on.
	Port int
	// User is the account the client key logs in as (the current user).
	User string
	// ConfigFile is an ssh client config (for ssh -F) with the client key,
	// a known_hosts file holding the server's key for 127.0.0.1 and
	// localhost on Port, and strict host key checking.
	ConfigFile string
	// IdentityFile is the client's private key and KnownHostsFile the
	// known_hosts file, for callers that pass ssh options instead of
	// ConfigFile.
	IdentityFile, KnownHostsFile string
	// Dir holds the keys, the configs and sshd's log.
	Dir string
}

// Start starts sshd and stops it when the test ends.
func Start(tb testing.TB) *Server {
	tb.Helper()
	sshd, keygen := requireSSH(tb)
	u, err := user.Current()
	if err != nil {
		tb.Fatal(err)
	}
	if os.Geteuid() == 0 {
		// sshd running as root wants its privilege separation directory,
		// which the Debian service creates at boot (RuntimeDirectory).
		if err := os.MkdirAll("/run/sshd", 0o755); err != nil {
			tb.Fatalf("create sshd's privilege separation directory: %v", err)
		}
	}
	dir, err := os.MkdirTemp("", "dbrig-sshd-")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { os.RemoveAll(dir) })
	s := &Server{User: u.Username, Dir: dir, ConfigFile: filepath.Join(dir, "ssh_config"),
		IdentityFile: filepath.Join(dir, "id_ed25519"), KnownHostsFile: filepath.Join(dir, "known_hosts")}
	hostKey := Keys(tb, keygen, dir)
	s.start(tb, sshd)

	var known strings.Builder
	for _, h := range []string{"127.0.0.1", "localhost"} {
		fmt.Fprintf(&known, "[%s]:%d %s\n", h, s.Port, hostKey)
	}
	writeFile(tb, s.KnownHostsFile, known.String(), 0o600)
	writeFile(tb, s.ConfigFile, ClientConfig(s.IdentityFile, s.KnownHostsFile, ""), 0o600)
	return s
}

// ClientConfig is an ssh_config that logs in to every host with the key
// identityFile only and trusts only the hosts in knownHostsFile, never
// asking for a password; extra lines follow.
func ClientConfig(identityFile, knownHostsFile, extra string) string {
	return fmt.Sprintf(`Host *
  IdentityFile %s
  IdentitiesOnly yes
  IdentityAgent none
  UserKnownHostsFile %s
  GlobalKnownHostsFile /dev/null
  StrictHostKeyChecking yes
  PasswordAuthentication no
  KbdInteractiveAuthentication no
`, identityFile, knownHostsFile) + extra
}

// requireSSH skips the test (fails it in CI) without OpenSSH's server and
// client, and returns the paths of sshd and ssh-keygen.
func requireSSH(tb testing.TB) (sshd, keygen string) {
	tb.Helper()
	sshd = FindSSHD()
	if sshd == "" {
		missing(tb, "sshd not found (install Debian's openssh-server)")
	}
	keygen, err := exec.LookPath("ssh-keygen")
	if err != nil {
		missing(tb, "ssh-keygen not found (install Debian's openssh-client)")
	}
	if _, err := exec.LookPath("ssh"); err != nil {
		missing(tb, "ssh not found (install Debian's openssh-client)")
	}
	return sshd, keygen
}

// start runs sshd on a free port, stopped when the test ends. sshd binds
// the port itself, so a port freed here might be taken before it starts:
// it tries a few.
func (s *Server) start(tb testing.TB, sshd string) {
	tb.Helper()
	dir := s.Dir
	for attempt := 0; ; attempt++ {
		s.Port = freePort(tb)
		writeFile(tb, filepath.Join(dir, "sshd_config"), ServerConfig("127.0.0.1", s.Port, dir, filepath.Join(dir, "sshd.pid"), s.User), 0o600)
		cmd := exec.Command(sshd, "-D", "-f", filepath.Join(dir, "sshd_config"), "-E", filepath.Join(dir, "sshd.log"))
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
		if err := cmd.Start(); err != nil {
			tb.Fatalf("start %s: %v", sshd, err)
		}
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		err := waitListening(s.Port, exited)
		if err == nil {
			tb.Cleanup(func() {
				_ = cmd.Process.Signal(syscall.SIGTERM)
				select {
				case <-exited:
				case <-time.After(5 * time.Second):
					_ = cmd.Process.Kill()
					<-exited
				}
			})
			return
		}
		_ = cmd.Process.Kill()
		if attempt == 4 {
			tb.Fatalf("sshd did not start: %v; log:\n%s", err, readFileOr(filepath.Join(dir, "sshd.log")))
		}
	}
}

// Log returns what sshd logged so far, for failure messages.
func (s *Server) Log() string { return readFileOr(filepath.Join(s.Dir, "sshd.log")) }

// Keys makes, in dir, a host key (host_ed25519) and a client key
// (id_ed25519) with ssh-keygen at keygen, authorizes the client key
// (authorized_keys), and returns the host key as known_hosts lists it.
func Keys(tb testing.TB, keygen, dir string) (hostKey string) {
	tb.Helper()
	for _, k := range []string{"host_ed25519", "id_ed25519"} {
		out, err := exec.Command(keygen, "-q", "-t", "ed25519", "-N", "", "-C", "dbrig-test", "-f", filepath.Join(dir, k)).CombinedOutput()
		if err != nil {
			tb.Fatalf("ssh-keygen: %v: %s", err, out)
		}
	}
	writeFile(tb, filepath.Join(dir, "authorized_keys"), readFile(tb, filepath.Join(dir, "id_ed25519.pub")), 0o600)
	return strings.Join(strings.Fields(readFile(tb, filepath.Join(dir, "host_ed25519.pub")))[:2], " ")
}

// ServerConfig is the sshd_config of a test server listening on listen:port
// that lets user in with the key Keys made in dir, and nothing else; extra
// lines (such as SetEnv) follow.
func ServerConfig(listen string, port int, dir, pidFile, user string, extra ...string) string {
	return fmt.Sprintf(`Port %d
ListenAddress %s
HostKey %s
PidFile %s
AuthorizedKeysFile %s
StrictModes no
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
PermitRootLogin prohibit-password
UsePAM no
AllowUsers %s
MaxStartups 100
LogLevel VERBOSE
`, port, listen, filepath.Join(dir, "host_ed25519"), pidFile, filepath.Join(dir, "authorized_keys"), user) + strings.Join(extra, "\n")
}

// FindSSHD is the path of sshd, "" when it is not installed.
func FindSSHD() string {
	if p, err := exec.LookPath("sshd"); err == nil {
		return p
	}
	for _, p := range []string{"/usr/sbin/sshd", "/usr/local/sbin/sshd"} {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return ""
}

func missing(tb testing.TB, why string) {
	tb.Helper()
	if os.Getenv("CI") != "" {
		tb.Fatalf("%s: CI must install it (apt-get install openssh-server openssh-client)", why)
	}
	tb.Skipf("skipped: %s", why)
}

// waitListening waits until something accepts on the port, or sshd exits.
func waitListening(port int, exited <-chan error) error {
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case err := <-exited:
			return fmt.Errorf("sshd exited: %v", err)
		default:
		}
		c, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), 200*time.Millisecond)
		if err == nil {
			c.Close()
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("port %d not listening after 10 s", port)
}

// freePort returns a loopback port nothing listens on at the moment.
func freePort(tb testing.TB) int {
	tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// ClosedPort returns a loopback port where nothing listens, for an
// unreachable host.
func ClosedPort(tb testing.TB) int { return freePort(tb) }

func readFile(tb testing.TB, name string) string {
	tb.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		tb.Fatal(err)
	}
	return string(b)
}

func readFileOr(name string) string {
	b, _ := os.ReadFile(name)
	return string(b)
}

func writeFile(tb testing.TB, name, content string, mode os.FileMode) {
	tb.Helper()
	if err := os.WriteFile(name, []byte(content), mode); err != nil {
		tb.Fatal(err)
	}
}
