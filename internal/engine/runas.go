package engine

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// RunAs runs an installer-like program (initdb, mariadb-install-db, a
// server in single-user or bootstrap mode) as user in dir, stdin on its
// standard input, and returns what it said on stdout and stderr. The
// program may fork servers of its own: a cancel of ctx stops its whole
// process group, and Start ends it with dbrig.
func RunAs(ctx context.Context, user ServerUser, dir, stdin, prog string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, prog, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: user.Credential()}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	cmd.Stdin = strings.NewReader(stdin)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := Start(cmd); err != nil {
		return "", fmt.Errorf("start %s: %w", prog, err)
	}
	err := cmd.Wait()
	return out.String(), err
}

// NewPassword is a random password of 24 bytes from crypto/rand, in
// base64 (URL alphabet, unpadded: no quote, no backslash, no space).
func NewPassword() (string, error) {
	pw := make([]byte, 24)
	if _, err := rand.Read(pw); err != nil {
		return "", fmt.Errorf("make a password: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(pw), nil
}
