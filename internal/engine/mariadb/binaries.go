package mariadb

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
)

// Binaries is one installation of MariaDB's server programs.
type Binaries struct {
	// Server is the path of mariadbd.
	Server string
	// InstallDB is the path of mariadb-install-db.
	InstallDB string
	// BaseDir, when set, is passed to both as --basedir: an installation
	// named with --mariadb-bin (a tarball unpacked anywhere) finds its
	// share/ and plugin directories through it. Debian's packages need none.
	BaseDir string
	Version string // "10.11.19"
}

// ErrNoServer is returned when no MariaDB server programs are installed.
var ErrNoServer = errors.New("no MariaDB server found (looked for mariadbd and mariadb-install-db on PATH, in /usr/sbin and /usr/bin): " +
	"install it with `apt-get install -y mariadb-server` (Debian) or `scripts/install-deps`, or pass --mariadb-bin DIR")

var versionRE = regexp.MustCompile(`Ver\s+(\d+\.\d+\.\d+)`)

// FindBinaries locates mariadbd and mariadb-install-db. An explicit dir
// (--mariadb-bin) wins: mariadbd must be in it and mariadb-install-db in it
// or in ../bin or ../scripts beside it (Debian's /usr/sbin and /usr/bin, a
// release tarball's bin/ and scripts/). Otherwise both are looked for on
// PATH, then in /usr/sbin and /usr/bin.
func FindBinaries(ctx context.Context, dir string) (Binaries, error) {
	if dir != "" {
		b, err := probeDir(ctx, dir)
		if err != nil {
			return Binaries{}, fmt.Errorf("--mariadb-bin %s: %w", dir, err)
		}
		return b, nil
	}
	server := lookFor("mariadbd")
	installDB := lookFor("mariadb-install-db")
	if server == "" || installDB == "" {
		return Binaries{}, ErrNoServer
	}
	return probe(ctx, Binaries{Server: server, InstallDB: installDB})
}

func lookFor(program string) string {
	if p, err := exec.LookPath(program); err == nil {
		if abs, err := filepath.Abs(p); err == nil {
			return abs
		}
		return p
	}
	for _, dir := range []string{"/usr/sbin", "/usr/bin"} {
		if isExecutable(filepath.Join(dir, program)) {
			return filepath.Join(dir, program)
		}
	}
	return ""
}

func probeDir(ctx context.Context, dir string) (Binaries, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return Binaries{}, err
	}
	b := Binaries{Server: filepath.Join(dir, "mariadbd"), BaseDir: filepath.Dir(dir)}
	if !isExecutable(b.Server) {
		return Binaries{}, fmt.Errorf("no mariadbd program in %s", dir)
	}
	for _, d := range []string{dir, filepath.Join(dir, "..", "bin"), filepath.Join(dir, "..", "scripts")} {
		if p := filepath.Clean(filepath.Join(d, "mariadb-install-db")); isExecutable(p) {
			b.InstallDB = p
			break
		}
	}
	if b.InstallDB == "" {
		return Binaries{}, fmt.Errorf("no mariadb-install-db program in %s, ../bin or ../scripts", dir)
	}
	return probe(ctx, b)
}

func probe(ctx context.Context, b Binaries) (Binaries, error) {
	out, err := exec.CommandContext(ctx, b.Server, "--version").Output()
	if err != nil {
		return Binaries{}, fmt.Errorf("%s --version: %w", b.Server, err)
	}
	m := versionRE.FindStringSubmatch(string(out))
	if m == nil || !strings.Contains(string(out), "MariaDB") {
		return Binaries{}, fmt.Errorf("%s is not a MariaDB server: it says %q", b.Server, strings.TrimSpace(string(out)))
	}
	b.Version = m[1]
	return b, nil
}

func isExecutable(path string) bool {
	st, err := os.Stat(path)
	return err == nil && !st.IsDir() && st.Mode().Perm()&0o111 != 0
}

// Dir is the directory of mariadbd.
func (b Binaries) Dir() string { return filepath.Dir(b.Server) }
