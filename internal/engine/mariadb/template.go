package mariadb

import (
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/dbrig/dbrig/internal/engine"
)

// The template is the data directory mariadb-install-db makes, held in
// memory, without dbrig's login: the first Start of a process for given
// binaries, server account and settings fixed at install time runs the
// installer once, in a scratch directory removed at once, and every Start
// writes the image into its own data directory and makes its login in a
// bootstrap session of its own. The installer costs more CPU than the copy
// and the bootstrap (docs/engines.md).
type templateKey struct {
	installDB, server, version string
	uid                        uint32
	initArgs                   string
}

var templates engine.OncePerKey[templateKey, *engine.DirImage]

// redoLog is InnoDB's redo log, which goes to innodb_log_group_home_dir
// (the instance's wal_dir) when one is set.
const redoLog = "ib_logfile0"

// templateFor returns the template for these binaries, server account and
// install-time settings, made if no Start of this process has made it.
func templateFor(ctx context.Context, bin Binaries, user engine.ServerUser, initArgs map[string]string) (*engine.DirImage, error) {
	return templates.Get(ctx, templateKeyOf(bin, user, initArgs), func(ctx context.Context) (*engine.DirImage, error) {
		return makeTemplate(ctx, bin, user, optionArgs(initArgs))
	})
}

func templateKeyOf(bin Binaries, user engine.ServerUser, initArgs map[string]string) templateKey {
	return templateKey{bin.InstallDB, bin.Server, bin.Version, user.UID, strings.Join(optionArgs(initArgs), " ")}
}

// optionArgs are settings as mariadbd's options, in a stable order.
func optionArgs(settings map[string]string) []string {
	var args []string
	for _, k := range slices.Sorted(maps.Keys(settings)) {
		args = append(args, optionArg(k, settings[k]))
	}
	return args
}

// makeTemplate runs mariadb-install-db in a 0700 scratch directory of the
// server account's, reads the data directory into memory and removes the
// scratch directory, whatever happens.
func makeTemplate(ctx context.Context, bin Binaries, user engine.ServerUser, initArgs []string) (*engine.DirImage, error) {
	parent := os.TempDir()
	RemoveStale(parent)
	dir, err := os.MkdirTemp(parent, "dbrig-mariadbtmpl-")
	if err != nil {
		return nil, fmt.Errorf("create the template directory: %w", err)
	}
	defer os.RemoveAll(dir)
	// Recorded first, so that a later run removes the directory of a dbrig
	// killed while the installer runs in it.
	if err := engine.WriteOwner(dir); err != nil {
		return nil, fmt.Errorf("record the template directory's owner: %w", err)
	}
	data, tmp := filepath.Join(dir, "data"), filepath.Join(dir, "tmp")
	if err := os.Mkdir(tmp, 0o700); err != nil {
		return nil, err
	}
	for _, p := range []string{dir, tmp} {
		if err := user.Chown(p); err != nil {
			return nil, err
		}
	}
	args := []string{"--no-defaults"}
	if bin.BaseDir != "" {
		args = append(args, "--basedir="+bin.BaseDir)
	}
	args = append(args, "--datadir="+data, "--tmpdir="+tmp, "--skip-test-db", "--skip-name-resolve",
		"--auth-root-authentication-method=socket", "--auth-root-socket-user=root")
	args = append(args, initArgs...)
	out, err := runAs(ctx, user, dir, "", bin.InstallDB, args...)
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("mariadb-install-db stopped: %w", context.Cause(ctx))
		}
		return nil, fmt.Errorf("mariadb-install-db in %s: %w; it said:\n%s", data, err, installDBProblems(out))
	}
	image, err := engine.ReadDirImage(data)
	if err != nil {
		return nil, err
	}
	// InnoDB allocates its redo log and system tablespace rather than
	// writing their zeros: so do the copies.
	image.AllocateZeros = true
	return image, nil
}

// copyTemplate writes the template into the instance's data directory (its
// redo log into wal_dir when set), then makes dbrig's login and drops the
// installer's in a bootstrap session.
func (i *Instance) copyTemplate(ctx context.Context, template *engine.DirImage) error {
	image := template
	if i.walDir != "" {
		image = image.Without(redoLog)
		if err := template.WriteFile(redoLog, filepath.Join(i.walDir, redoLog), i.user); err != nil {
			return fmt.Errorf("copy the redo log to %s: %w", i.walDir, err)
		}
	}
	if err := image.Write(i.dataDir, i.user, nil); err != nil {
		return fmt.Errorf("copy the data directory template to %s: %w", i.dataDir, err)
	}
	args := []string{"--no-defaults"}
	if i.bin.BaseDir != "" {
		args = append(args, "--basedir="+i.bin.BaseDir)
	}
	args = append(args, "--bootstrap", "--datadir="+i.dataDir, "--tmpdir="+i.tmpDir, "--skip-name-resolve",
		"--log-warnings=0", "--enforce-storage-engine=", "--max-allowed-packet=8M", "--net-buffer-length=16K")
	if i.walDir != "" {
		args = append(args, "--innodb-log-group-home-dir="+i.walDir)
	}
	args = append(args, optionArgs(i.initArgs)...)
	out, err := runAs(ctx, i.user, i.dir, loginsSQL(i.password), i.bin.Server, args...)
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("mariadbd --bootstrap stopped: %w", context.Cause(ctx))
		}
		return fmt.Errorf("make the login with mariadbd --bootstrap in %s: %w; it said:\n%s", i.dataDir, err, installDBProblems(out))
	}
	return nil
}

// runAs runs a program as the server's account in dir, stdin on its
// standard input, and returns what it said. It runs mariadbd as its child
// or is mariadbd: a cancel stops the whole process group, and engine.Start
// ends it with dbrig.
func runAs(ctx context.Context, user engine.ServerUser, dir, stdin, prog string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, prog, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: user.Credential()}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	cmd.Stdin = strings.NewReader(stdin)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := engine.Start(cmd); err != nil {
		return "", fmt.Errorf("start %s: %w", prog, err)
	}
	err := cmd.Wait()
	return out.String(), err
}

// loginsSQL makes dbrig's login, from the password's hash only, and drops
// every other: no root (mariadb-install-db makes one that logs in through
// the socket without a password), no anonymous login; proxy grants for
// host names that skip-name-resolve ignores (and warns about at every
// start) go.
func loginsSQL(password string) string {
	hash := nativePasswordHash(password)
	var b strings.Builder
	// Bootstrap runs without grant tables; FLUSH PRIVILEGES loads them so
	// that account statements work.
	b.WriteString("FLUSH PRIVILEGES;\n")
	for _, host := range []string{"127.0.0.1", "localhost"} {
		fmt.Fprintf(&b, "CREATE USER '%s'@'%s' IDENTIFIED BY PASSWORD '%s';\n", SuperUser, host, hash)
		fmt.Fprintf(&b, "GRANT ALL PRIVILEGES ON *.* TO '%s'@'%s' WITH GRANT OPTION;\n", SuperUser, host)
	}
	b.WriteString("DROP USER IF EXISTS 'root'@'localhost';\n")
	b.WriteString("DROP USER IF EXISTS ''@'localhost';\n")
	b.WriteString("DELETE FROM mysql.proxies_priv WHERE Host <> 'localhost';\n")
	return b.String()
}
