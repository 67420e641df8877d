package doctor

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// SSH runs the collector on remote hosts with the system's ssh client, so
// the user's ssh config, keys, agent and known_hosts apply. It never asks
// for a password (BatchMode=yes): a host that needs one is unreachable.
type SSH struct {
	// Program is the ssh client (default "ssh").
	Program string
	// ConfigFile replaces ~/.ssh/config (ssh -F) when set.
	ConfigFile string
	// Options are extra -o KEY=VALUE options; they take precedence over
	// dbrig's defaults (ConnectTimeout, LogLevel) but not over BatchMode.
	Options []string
}

// Args is the ssh command line that runs the collector on t, given the
// time allowed for the whole host.
func (s SSH) Args(t Target, timeout time.Duration) []string {
	args := []string{"-o", "BatchMode=yes"}
	if s.ConfigFile != "" {
		args = append(args, "-F", s.ConfigFile)
	}
	// ssh keeps the first value it sees for an option: the user's first.
	for _, o := range s.Options {
		args = append(args, "-o", o)
	}
	connect := max(1, int(math.Ceil(timeout.Seconds())))
	args = append(args, "-o", "ConnectTimeout="+strconv.Itoa(connect), "-o", "LogLevel=ERROR", "-T")
	if t.Port != 0 {
		args = append(args, "-p", strconv.Itoa(t.Port))
	}
	if t.User != "" {
		args = append(args, "-l", t.User)
	}
	return append(args, "--", t.Host, "sh -s")
}

// RemoteArgs is Args with remote, in place of the collector's "sh -s",
// as the command the host's shell runs (dbrig's agent, a shipped backup).
func (s SSH) RemoteArgs(t Target, timeout time.Duration, remote string) []string {
	args := s.Args(t, timeout)
	args[len(args)-1] = remote
	return args
}

// ShellQuote quotes a word for the remote shell.
func ShellQuote(w string) string { return "'" + strings.ReplaceAll(w, "'", `'\''`) + "'" }

// Collect runs the collector script on t and parses its output. The error
// carries ssh's own message (connection refused, host key verification
// failed, permission denied) or says the time ran out.
func (s SSH) Collect(ctx context.Context, t Target, timeout time.Duration) (*Snapshot, error) {
	prog := s.Program
	if prog == "" {
		prog = "ssh"
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, prog, s.Args(t, timeout)...)
	cmd.Stdin = strings.NewReader(CollectorScript)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = 2 * time.Second // a child that keeps the pipes open must not hold us
	err := cmd.Run()
	if ctx.Err() == context.DeadlineExceeded {
		return nil, fmt.Errorf("no answer within %s (--timeout)", timeout)
	}
	if err != nil {
		var ee *exec.ExitError
		msg := lastLines(stderr.String(), 3)
		switch {
		case errors.As(err, &ee) && ee.ExitCode() == 255:
			if msg == "" {
				msg = "ssh failed (exit status 255)"
			}
			return nil, errors.New(msg)
		case errors.As(err, &ee):
			if msg != "" {
				msg = ": " + msg
			}
			return nil, fmt.Errorf("the collector exited with status %d%s", ee.ExitCode(), msg)
		}
		return nil, fmt.Errorf("run %s: %w", prog, err)
	}
	snap, err := ParseSnapshot(&stdout)
	if err != nil {
		if msg := lastLines(stderr.String(), 3); msg != "" {
			err = fmt.Errorf("%w (%s)", err, msg)
		}
		return nil, err
	}
	return snap, nil
}

// lastLines returns the last n non-empty lines of s, joined with "; ".
func lastLines(s string, n int) string {
	var lines []string
	for l := range strings.Lines(s) {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "; ")
}
