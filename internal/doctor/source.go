package doctor

import (
	"bufio"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// CollectorScript is the POSIX shell script that prints a host's sysfs and
// /proc files in the snapshot format [ParseSnapshot] reads. dbrig runs it on
// remote hosts (ssh HOST sh -s), and testdata/capture.sh runs it to capture
// fixtures.
//
//go:embed collect.sh
var CollectorScript string

// Source is what the checks read: files and symbolic links under a root
// (paths such as "sys/block/sda/size", without a leading slash), and the
// output of a few commands. [DirSource] reads a live file system; a
// [Snapshot] holds what the collector script printed.
type Source interface {
	// ReadFile returns a file's content.
	ReadFile(name string) ([]byte, error)
	// ReadDir returns the names in a directory, sorted.
	ReadDir(name string) ([]string, error)
	// ReadLink returns a symbolic link's target.
	ReadLink(name string) (string, error)
	// Command returns the output of a diagnostic command such as
	// "ethtool eth0", or an error when it is not available.
	Command(args ...string) (string, error)
}

// ErrNoCommand says a command's output is not available: not installed, not
// captured, or the source is not the real root.
var ErrNoCommand = errors.New("command not available")

// DirSource reads a file system tree rooted at Root ("/" for this host). It
// runs commands (ethtool) only when Root is "/", each bounded by
// CommandTimeout (default 1 s).
type DirSource struct {
	Root           string
	CommandTimeout time.Duration
}

func (d DirSource) path(name string) string { return filepath.Join(d.Root, filepath.FromSlash(name)) }

// ReadFile implements [Source].
func (d DirSource) ReadFile(name string) ([]byte, error) { return os.ReadFile(d.path(name)) }

// ReadDir implements [Source].
func (d DirSource) ReadDir(name string) ([]string, error) {
	entries, err := os.ReadDir(d.path(name))
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names, err
}

// ReadLink implements [Source].
func (d DirSource) ReadLink(name string) (string, error) { return os.Readlink(d.path(name)) }

// Command implements [Source]: it returns what the command printed, also
// when it exits non-zero or is stopped at the timeout.
func (d DirSource) Command(args ...string) (string, error) {
	if filepath.Clean(d.Root) != "/" || len(args) == 0 {
		return "", ErrNoCommand
	}
	bin, err := exec.LookPath(args[0])
	if err != nil {
		return "", ErrNoCommand
	}
	timeout := d.CommandTimeout
	if timeout <= 0 {
		timeout = time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args[1:]...)
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	out, err := cmd.Output()
	// Like the collector, keep what the command printed even when it exits
	// non-zero: ethtool run without root prints the link settings, then
	// fails on the wake-on-LAN query.
	var exitErr *exec.ExitError
	if err != nil && !errors.As(err, &exitErr) {
		return "", fmt.Errorf("%s: %w", strings.Join(args, " "), err)
	}
	return string(out), nil
}

// Snapshot is a host's files as the collector script printed them.
type Snapshot struct {
	files      map[string]string
	links      map[string]string
	unreadable map[string]bool
	commands   map[string]string
}

// snapshotHeader opens every snapshot; the number is the format version.
const snapshotHeader = "@dbrig-doctor 1"

// ParseSnapshot reads the collector's output. Lines before the header (a
// login banner, a shell's start-up noise) are ignored; output that ends
// before the collector's "@end" line is an error, so a dropped connection
// is not taken for a host without disks.
func ParseSnapshot(r io.Reader) (*Snapshot, error) {
	s := &Snapshot{files: map[string]string{}, links: map[string]string{}, unreadable: map[string]bool{}, commands: map[string]string{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 16<<20)
	var (
		header, end bool
		cur         *strings.Builder
		curKey      string
		curMap      map[string]string
		lineNo      int
	)
	flush := func() {
		if cur != nil {
			curMap[curKey] = cur.String()
			cur = nil
		}
	}
	for sc.Scan() {
		line := sc.Text()
		lineNo++
		if !header {
			header = line == snapshotHeader
			continue
		}
		if end {
			break
		}
		if rest, ok := strings.CutPrefix(line, "|"); ok {
			if cur == nil {
				return nil, fmt.Errorf("snapshot line %d: content outside a file", lineNo)
			}
			cur.WriteString(rest)
			cur.WriteByte('\n')
			continue
		}
		flush()
		kind, rest, _ := strings.Cut(line, " ")
		switch kind {
		case "@F":
			if err := validPath(rest); err != nil {
				return nil, fmt.Errorf("snapshot line %d: %w", lineNo, err)
			}
			cur, curKey, curMap = &strings.Builder{}, rest, s.files
		case "@C":
			cur, curKey, curMap = &strings.Builder{}, rest, s.commands
		case "@L":
			name, target, ok := strings.Cut(rest, " ")
			if !ok {
				return nil, fmt.Errorf("snapshot line %d: link without a target", lineNo)
			}
			if err := validPath(name); err != nil {
				return nil, fmt.Errorf("snapshot line %d: %w", lineNo, err)
			}
			s.links[name] = target
		case "@E":
			s.unreadable[rest] = true
		case "@end":
			end = true
		case "":
			// blank line between entries
		default:
			return nil, fmt.Errorf("snapshot line %d: unknown entry %q", lineNo, kind)
		}
	}
	flush()
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read snapshot: %w", err)
	}
	if !header {
		return nil, fmt.Errorf("not a dbrig doctor snapshot: no %q line", snapshotHeader)
	}
	if !end {
		return nil, errors.New("snapshot ends before the collector's @end line: the output was cut short")
	}
	return s, nil
}

func validPath(p string) error {
	if p == "" || strings.HasPrefix(p, "/") || path.Clean(p) != p || p == ".." || strings.HasPrefix(p, "../") {
		return fmt.Errorf("bad path %q: want a clean relative path", p)
	}
	return nil
}

// ReadSnapshotFile parses a snapshot saved in a file.
func ReadSnapshotFile(name string) (*Snapshot, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	s, err := ParseSnapshot(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return s, nil
}

func notExist(op, name string) error {
	return &fs.PathError{Op: op, Path: name, Err: fs.ErrNotExist}
}

// ReadFile implements [Source].
func (s *Snapshot) ReadFile(name string) ([]byte, error) {
	if c, ok := s.files[name]; ok {
		return []byte(c), nil
	}
	if s.unreadable[name] {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrPermission}
	}
	return nil, notExist("open", name)
}

// ReadDir implements [Source]: the names that appear under name in any
// file, link or unreadable entry.
func (s *Snapshot) ReadDir(name string) ([]string, error) {
	prefix := name + "/"
	seen := map[string]bool{}
	add := func(p string) {
		if rest, ok := strings.CutPrefix(p, prefix); ok {
			first, _, _ := strings.Cut(rest, "/")
			seen[first] = true
		}
	}
	for p := range s.files {
		add(p)
	}
	for p := range s.links {
		add(p)
	}
	for p := range s.unreadable {
		add(p)
	}
	if len(seen) == 0 {
		return nil, notExist("readdir", name)
	}
	names := make([]string, 0, len(seen))
	for n := range seen {
		names = append(names, n)
	}
	slices.Sort(names)
	return names, nil
}

// ReadLink implements [Source].
func (s *Snapshot) ReadLink(name string) (string, error) {
	if t, ok := s.links[name]; ok {
		return t, nil
	}
	return "", notExist("readlink", name)
}

// Command implements [Source].
func (s *Snapshot) Command(args ...string) (string, error) {
	if out, ok := s.commands[strings.Join(args, " ")]; ok {
		return out, nil
	}
	return "", ErrNoCommand
}
