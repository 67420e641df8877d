package agent

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"time"

	"github.com/dbrig/dbrig/internal/doctor"
	"github.com/dbrig/dbrig/internal/engine"
)

// SSH starts agents on hosts with the system's ssh client, as `dbrig doctor
// --hosts` reaches them: the user's ssh config, keys, agent and known_hosts
// apply, no password is ever asked (BatchMode), and no port is opened on
// the host: the agent speaks on the session's standard input and output.
type SSH struct {
	doctor.SSH
	// Binary is dbrig on the hosts (default "dbrig", found on the remote
	// PATH); Install sets it to the copy it made.
	Binary string
	// Args are extra arguments of `dbrig agent`.
	Args []string
	// ConnectTimeout bounds ssh's connection (default 15 s).
	ConnectTimeout time.Duration
}

func (s SSH) program() string {
	if s.Program == "" {
		return "ssh"
	}
	return s.Program
}

// command is the ssh command line that runs remote on t.
func (s SSH) command(t doctor.Target, remote string) []string {
	timeout := s.ConnectTimeout
	if timeout == 0 {
		timeout = 15 * time.Second
	}
	return s.SSH.RemoteArgs(t, timeout, remote)
}

// Start runs `dbrig agent` on t and returns its transport. The ssh process
// dies with dbrig (its parent-death signal), and with it the session: the
// agent then stops its load and servers.
func (s SSH) Start(t doctor.Target) (Transport, error) {
	bin := s.Binary
	if bin == "" {
		bin = "dbrig"
	}
	words := []string{doctor.ShellQuote(bin), "agent"}
	for _, a := range s.Args {
		words = append(words, doctor.ShellQuote(a))
	}
	cmd := exec.Command(s.program(), s.command(t, strings.Join(words, " "))...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return Transport{}, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return Transport{}, err
	}
	tl := NewTail()
	cmd.Stderr = tl
	if err := engine.Start(cmd); err != nil {
		return Transport{}, fmt.Errorf("start %s: %w", s.program(), err)
	}
	return Transport{Name: t.String(), R: stdout, W: stdin, Tail: tl,
		Wait: func() error {
			err := cmd.Wait()
			var ee *exec.ExitError
			if errors.As(err, &ee) && ee.ExitCode() == 255 {
				return fmt.Errorf("%w (ssh exited with status 255)", ErrLost)
			}
			return err
		},
		Kill: func() { _ = cmd.Process.Kill() },
	}, nil
}

// uname is the `uname -sm` of hosts this binary runs on.
func uname() string {
	arch := map[string]string{"amd64": "x86_64", "arm64": "aarch64", "386": "i686"}[runtime.GOARCH]
	if arch == "" {
		arch = runtime.GOARCH
	}
	return "Linux " + arch
}

// Install copies the local binary (this dbrig) to t, as
// ~/.cache/dbrig/dbrig-HASH (the hash of its bytes, so a host that has it
// already is not sent it again), refusing a host of another system or
// architecture, and returns the remote path.
func (s SSH) Install(ctx context.Context, t doctor.Target, local string) (string, error) {
	b, err := os.ReadFile(local)
	if err != nil {
		return "", fmt.Errorf("read %s to install it: %w", local, err)
	}
	sum := sha256.Sum256(b)
	name := "dbrig-" + hex.EncodeToString(sum[:8])
	script := fmt.Sprintf(`set -e
case "$(uname -sm)" in %s) ;; *) echo "this host is $(uname -sm); the coordinator's dbrig is built for %s" >&2; exit 3;; esac
d="$HOME/.cache/dbrig"; f="$d/%s"
if [ -x "$f" ]; then echo "$f"; exit 0; fi
mkdir -p "$d"; chmod 700 "$d"
cat > "$f.$$"; chmod 755 "$f.$$"; mv "$f.$$" "$f"; echo "$f"`, doctor.ShellQuote(uname()), uname(), name)
	cmd := exec.CommandContext(ctx, s.program(), s.command(t, "sh -c "+doctor.ShellQuote(script))...)
	cmd.Stdin = bytes.NewReader(b)
	var out bytes.Buffer
	tl := NewTail()
	cmd.Stdout, cmd.Stderr = &out, tl
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Run(); err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) && strings.Contains(err.Error(), "broken pipe") {
			err = nil // the host had it and did not read it
		}
		if err != nil {
			msg := tl.String()
			if msg == "" {
				msg = err.Error()
			}
			return "", fmt.Errorf("install dbrig on %s: %s", t, msg)
		}
	}
	path := strings.TrimSpace(out.String())
	if path == "" || !strings.HasSuffix(path, name) {
		return "", fmt.Errorf("install dbrig on %s: the host answered %q", t, path)
	}
	return path, nil
}

// Pipe is a transport to an agent in a local process (tests, and a local
// agent): cmd is `dbrig agent`.
func Pipe(name string, cmd *exec.Cmd) (Transport, error) {
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return Transport{}, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return Transport{}, err
	}
	tl := NewTail()
	cmd.Stderr = io.MultiWriter(tl)
	if err := engine.Start(cmd); err != nil {
		return Transport{}, err
	}
	return Transport{Name: name, R: stdout, W: stdin, Tail: tl, Wait: cmd.Wait, Kill: func() { _ = cmd.Process.Kill() }}, nil
}
