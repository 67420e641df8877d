package engine

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
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
	cmd.Env = InstallerEnv()
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

// installerPath is the PATH the server account's programs run with: the
// system's directories only, as Debian's login.defs gives root.
const installerPath = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// InstallerEnv is the whole environment RunAs gives a program of the
// server account: a fixed PATH, LC_ALL=C, and dbrig's TZ when it has one
// (initdb writes the zone it finds into postgresql.conf, as it did when
// each instance ran its own initdb; without TZ it reads /etc/localtime).
// Nothing else of dbrig's environment reaches the account: a variable
// there could change what an installer makes, and the template it makes
// is kept for every later process.
func InstallerEnv() []string {
	env := []string{installerPath, "LC_ALL=C"}
	if tz, ok := os.LookupEnv("TZ"); ok {
		env = append(env, "TZ="+tz)
	}
	return env
}

// installerZone is the time zone an installer's environment resolves
// to, for a template's key: TZ when set, else where /etc/localtime leads.
func installerZone() string {
	if tz, ok := os.LookupEnv("TZ"); ok {
		return "TZ=" + tz
	}
	zone, err := filepath.EvalSymlinks("/etc/localtime")
	if err != nil {
		return "localtime unknown"
	}
	return "localtime=" + zone
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
