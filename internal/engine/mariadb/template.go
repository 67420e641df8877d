package mariadb

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/dbrig/dbrig/internal/engine"
)

// The template is the data directory mariadb-install-db makes, without
// dbrig's login, kept across processes in the template cache
// (engine.TemplateCache) and in memory once a process has it: the first
// Start on the machine for given binaries, server account and settings
// fixed at install time runs the installer once, in a scratch directory
// removed at once, and every Start writes the image into its own data
// directory and makes its login in a bootstrap session of its own. The
// installer costs more CPU than the copy and the bootstrap
// (docs/engines.md). The template holds no secret: the installer's root
// logs in through the socket by the server account's uid only, and every
// copy drops it.
type templateKey struct {
	installDB, server, version string
	uid                        uint32
	initArgs                   string
}

var templates engine.OncePerKey[templateKey, *engine.DirImage]

// redoLogs are InnoDB's redo log files, which go to
// innodb_log_group_home_dir (the instance's wal_dir) when one is set: one,
// ib_logfile0, from 10.5 on, two or more (innodb_log_files_in_group)
// before.
const redoLogs = "ib_logfile*"

// templateFor returns the template for these binaries, server account and
// install-time settings: this process's, else the template cache's, else
// made in a scratch directory under parent (the instance's base
// directory) and kept.
func templateFor(ctx context.Context, bin Binaries, user engine.ServerUser, initArgs map[string]string, parent string) (*engine.DirImage, error) {
	return templates.Get(ctx, templateKeyOf(bin, user, initArgs), func(ctx context.Context) (*engine.DirImage, error) {
		key := engine.TemplateKey{
			Engine:   "mariadb",
			Programs: []string{bin.InstallDB, bin.Server},
			Version:  bin.Version,
			Args:     append(append([]string{"--basedir=" + bin.BaseDir}, installDBArgs...), optionArgs(initArgs)...),
			UID:      user.UID, GID: user.GID,
		}
		image, err := engine.CachedTemplate(ctx, key, func(ctx context.Context) (*engine.DirImage, error) {
			return makeTemplate(ctx, bin, user, optionArgs(initArgs), parent)
		})
		if err != nil {
			return nil, err
		}
		// InnoDB allocates its redo log and system tablespace rather than
		// writing their zeros: so do the copies.
		image.AllocateZeros = true
		return image, nil
	})
}

// installDBArgs are mariadb-install-db's arguments but its directories,
// its --basedir and the settings fixed at install time: a template's key
// holds them.
var installDBArgs = []string{"--skip-test-db", "--skip-name-resolve",
	"--auth-root-authentication-method=socket", "--auth-root-socket-user=root"}

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
// server account's under parent, reads the data directory into memory and
// removes the scratch directory, whatever happens.
func makeTemplate(ctx context.Context, bin Binaries, user engine.ServerUser, initArgs []string, parent string) (*engine.DirImage, error) {
	dir, err := engine.MakeScratchDir(parent, "dbrig-mariadbtmpl-", user, "tmp")
	if err != nil {
		return nil, fmt.Errorf("make the template: %w", err)
	}
	defer os.RemoveAll(dir)
	data, tmp := filepath.Join(dir, "data"), filepath.Join(dir, "tmp")
	args := []string{"--no-defaults"}
	if bin.BaseDir != "" {
		args = append(args, "--basedir="+bin.BaseDir)
	}
	args = append(args, "--datadir="+data, "--tmpdir="+tmp)
	args = append(append(args, installDBArgs...), initArgs...)
	out, err := engine.RunAs(ctx, user, dir, "", bin.InstallDB, args...)
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("mariadb-install-db stopped: %w", context.Cause(ctx))
		}
		return nil, fmt.Errorf("mariadb-install-db in %s: %w; it said:\n%s", data, err, installDBProblems(out))
	}
	return engine.ReadDirImage(data, user.UID)
}

// copyTemplate writes the template into the instance's data directory (its
// redo log into wal_dir when set), gives the instance's directories to the
// server's account, then makes dbrig's login and drops the installer's in
// a bootstrap session.
func (i *Instance) copyTemplate(ctx context.Context, template *engine.DirImage) error {
	if err := i.writeDataDir(template); err != nil {
		return err
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
	out, err := engine.RunAs(ctx, i.user, i.dir, loginsSQL(i.password), i.bin.Server, args...)
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("mariadbd --bootstrap stopped: %w", context.Cause(ctx))
		}
		return i.bootstrapFailed(err, out)
	}
	return nil
}

// bootstrapFailed is the error of a failed bootstrap, with what it said
// less the password's hash, which is the stored login secret (a client
// that holds it can log in): an error that quotes a statement near it
// (a syntax error's "near ...") would put it in dbrig's output.
func (i *Instance) bootstrapFailed(err error, said string) error {
	said = strings.ReplaceAll(said, nativePasswordHash(i.password), "[hash]")
	return fmt.Errorf("make the login with mariadbd --bootstrap in %s: %w; it said:\n%s", i.dataDir, err, installDBProblems(said))
}

// writeDataDir writes the template into the instance's data directory,
// every redo log file into wal_dir when set, and gives the instance's
// directories to the server's account.
func (i *Instance) writeDataDir(template *engine.DirImage) error {
	image := template
	if i.walDir != "" {
		logs := template.Files(redoLogs)
		image = image.Without(logs...)
		for _, log := range logs {
			if err := template.WriteFile(log, filepath.Join(i.walDir, log), i.user); err != nil {
				return fmt.Errorf("copy the redo log to %s: %w", i.walDir, err)
			}
		}
	}
	if err := image.Write(i.dataDir, i.user, nil); err != nil {
		return fmt.Errorf("copy the data directory template to %s: %w", i.dataDir, err)
	}
	// Only now: before, the server's account could swap what root writes
	// for a link (DirImage.Write).
	for _, p := range i.serverDirs {
		if err := i.user.Chown(p); err != nil {
			return err
		}
	}
	return nil
}

// loginsSQL makes dbrig's login, from the password's hash only, and drops
// every other account but mariadb.sys (which owns the mysql.user view),
// with its grants: the template is made by mariadb-install-db running as
// the server account, which could plant an account, a role grant or a
// proxy grant in it before dbrig reads it; the installer's own root (which
// logs in through the socket without a password), anonymous login and
// proxy grants go the same way.
func loginsSQL(password string) string {
	hash := nativePasswordHash(password)
	kept := fmt.Sprintf("(User = '%s' AND Host IN ('127.0.0.1', 'localhost')) OR (User = 'mariadb.sys' AND Host = 'localhost')", SuperUser)
	var b strings.Builder
	// Bootstrap runs without grant tables; FLUSH PRIVILEGES loads them so
	// that account statements work, and again once the tables are pruned.
	b.WriteString("FLUSH PRIVILEGES;\n")
	for _, table := range []string{"global_priv", "db", "tables_priv", "columns_priv", "procs_priv"} {
		fmt.Fprintf(&b, "DELETE FROM mysql.%s WHERE NOT (%s);\n", table, kept)
	}
	b.WriteString("DELETE FROM mysql.roles_mapping;\n")
	b.WriteString("DELETE FROM mysql.proxies_priv;\n")
	b.WriteString("FLUSH PRIVILEGES;\n")
	for _, host := range []string{"127.0.0.1", "localhost"} {
		fmt.Fprintf(&b, "CREATE OR REPLACE USER '%s'@'%s' IDENTIFIED BY PASSWORD '%s';\n", SuperUser, host, hash)
		fmt.Fprintf(&b, "GRANT ALL PRIVILEGES ON *.* TO '%s'@'%s' WITH GRANT OPTION;\n", SuperUser, host)
	}
	return b.String()
}
