package postgres

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// Binaries is one installation of PostgreSQL's server programs.
type Binaries struct {
	Dir     string // holds initdb, postgres, pg_ctl, pgbench, pg_dump ...
	Version string // "15.18"
	Major   int
	Minor   int
}

// Path returns the path of one program of the installation.
func (b Binaries) Path(program string) string { return filepath.Join(b.Dir, program) }

// ErrNoServer is returned when no PostgreSQL server binaries are installed.
var ErrNoServer = errors.New("no PostgreSQL server binaries found (looked on PATH, in `pg_config --bindir` and /usr/lib/postgresql/*/bin): " +
	"install them with `apt-get install -y postgresql` (Debian) or pass --pg-bin DIR")

var versionRE = regexp.MustCompile(`\(PostgreSQL\)\s+(\d+)(?:\.(\d+))?`)

// FindBinaries locates PostgreSQL's server programs. An explicit dir wins;
// otherwise the candidates are the directory of `postgres` on PATH,
// `pg_config --bindir` and /usr/lib/postgresql/*/bin, and the newest
// version among them is chosen.
func FindBinaries(ctx context.Context, dir string) (Binaries, error) {
	if dir != "" {
		b, err := probe(ctx, dir)
		if err != nil {
			return Binaries{}, fmt.Errorf("--pg-bin %s: %w", dir, err)
		}
		return b, nil
	}
	var candidates []string
	if p, err := exec.LookPath("postgres"); err == nil {
		// A symlink on PATH (/usr/local/bin/postgres) points into the real
		// installation, which also holds pgbench and pg_dump.
		if real, err := filepath.EvalSymlinks(p); err == nil {
			p = real
		}
		candidates = append(candidates, filepath.Dir(p))
	}
	if out, err := exec.CommandContext(ctx, "pg_config", "--bindir").Output(); err == nil {
		candidates = append(candidates, strings.TrimSpace(string(out)))
	}
	globbed, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	candidates = append(candidates, globbed...)

	var found []Binaries
	seen := map[string]bool{}
	for _, c := range candidates {
		if seen[c] {
			continue
		}
		seen[c] = true
		if b, err := probe(ctx, c); err == nil {
			found = append(found, b)
		}
	}
	if len(found) == 0 {
		return Binaries{}, ErrNoServer
	}
	sort.SliceStable(found, func(i, j int) bool {
		if found[i].Major != found[j].Major {
			return found[i].Major > found[j].Major
		}
		return found[i].Minor > found[j].Minor
	})
	return found[0], nil
}

func probe(ctx context.Context, dir string) (Binaries, error) {
	for _, prog := range []string{"postgres", "initdb"} {
		if st, err := os.Stat(filepath.Join(dir, prog)); err != nil || st.IsDir() {
			return Binaries{}, fmt.Errorf("no %s program in %s", prog, dir)
		}
	}
	out, err := exec.CommandContext(ctx, filepath.Join(dir, "postgres"), "--version").Output()
	if err != nil {
		return Binaries{}, fmt.Errorf("%s --version: %w", filepath.Join(dir, "postgres"), err)
	}
	m := versionRE.FindStringSubmatch(string(out))
	if m == nil {
		return Binaries{}, fmt.Errorf("cannot read the version in %q", strings.TrimSpace(string(out)))
	}
	b := Binaries{Dir: dir}
	b.Major, _ = strconv.Atoi(m[1])
	b.Version = m[1]
	if m[2] != "" {
		b.Minor, _ = strconv.Atoi(m[2])
		b.Version += "." + m[2]
	}
	return b, nil
}
