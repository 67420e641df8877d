package tpch

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/dbrig/dbrig/internal/engine"
)

// GeneratorProgram is the TPC-H data generator dbrig runs: tpchgen-cli, a
// Rust port of the TPC's dbgen checked against it (Apache-2.0, installed
// from PyPI by scripts/install-deps).
const GeneratorProgram = "tpchgen-cli"

// Tables lists the TPC-H tables in load order (a table's foreign keys point
// to tables before it).
var Tables = []string{"region", "nation", "supplier", "customer", "part", "partsupp", "orders", "lineitem"}

var (
	generatorOnce sync.Once
	generatorPath string
	generatorErr  error
)

// FindGenerator locates tpchgen-cli: $DBRIG_TPCHGEN, then PATH, then the
// directories pip installs scripts into for this user (~/.local/bin, the
// user base's bin of python3 -m site, and the interpreter's own scripts
// directory). The answer is kept for the process.
func FindGenerator(ctx context.Context) (string, error) {
	generatorOnce.Do(func() { generatorPath, generatorErr = findGenerator(ctx) })
	return generatorPath, generatorErr
}

func findGenerator(ctx context.Context) (string, error) {
	if p := os.Getenv("DBRIG_TPCHGEN"); p != "" {
		if isExecutable(p) {
			return p, nil
		}
		return "", fmt.Errorf("DBRIG_TPCHGEN=%s is not an executable file", p)
	}
	if p, err := exec.LookPath(GeneratorProgram); err == nil {
		return p, nil
	}
	var dirs []string
	if home, err := os.UserHomeDir(); err == nil {
		dirs = append(dirs, filepath.Join(home, ".local", "bin"))
	}
	for _, probe := range [][]string{
		{"python3", "-m", "site", "--user-base"},
		{"python3", "-c", "import sysconfig; print(sysconfig.get_path('scripts'))"},
	} {
		out, err := exec.CommandContext(ctx, probe[0], probe[1:]...).Output()
		if err != nil {
			continue
		}
		dir := strings.TrimSpace(string(out))
		if probe[1] == "-m" {
			dir = filepath.Join(dir, "bin")
		}
		dirs = append(dirs, dir)
	}
	for _, d := range dirs {
		if p := filepath.Join(d, GeneratorProgram); isExecutable(p) {
			return p, nil
		}
	}
	return "", fmt.Errorf("the TPC-H data generator %s is not installed (looked on PATH and in %s): install it with scripts/install-deps, or `python3 -m pip install --user tpchgen-cli`, or name it with DBRIG_TPCHGEN",
		GeneratorProgram, strings.Join(dirs, ", "))
}

func isExecutable(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir() && st.Mode()&0o111 != 0
}

// FormatScale prints a scale factor the way the generator and the study
// files take it: 0.01, 1, 10.
func FormatScale(sf float64) string { return strconv.FormatFloat(sf, 'f', -1, 64) }

// generate streams one table at scale factor sf in the generator's '|'
// format, each line's trailing '|' removed so that PostgreSQL's COPY (and
// MariaDB's LOAD DATA) read exactly the table's columns. The reader fails
// with the generator's error when it exits badly; Close stops it.
func generate(ctx context.Context, program string, sf float64, table string) (io.ReadCloser, error) {
	ctx, cancel := context.WithCancel(ctx)
	// One thread: the server loading the rows needs the other core more
	// than the generator does, and the pipe keeps both busy.
	cmd := exec.CommandContext(ctx, program, "tbl", "--scale-factor", FormatScale(sf), "--tables", table, "--stdout", "--quiet", "--num-threads", "1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		cancel()
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		cancel()
		return nil, fmt.Errorf("start %s: %w", program, err)
	}
	return &tableStream{cmd: cmd, cancel: cancel, stderr: &stderr, table: table, r: bufio.NewReaderSize(out, 1<<16)}, nil
}

// oneGeneratorMaxScale is the largest scale factor whose tables one
// generator process writes to files before they load. The generator spends
// about a second of CPU starting, whatever it makes: eight times over when
// each table streams from a process of its own, which at this scale costs
// more than generating every table (2.2 s of CPU at 0.1, against about
// 9 s). The files of every table at 0.1 are about 100 MB, held only while
// they load; above it each table streams from its own process and needs
// no disk.
const oneGeneratorMaxScale = 0.1

// tableSource opens one table's rows, as generate streams them.
type tableSource func(ctx context.Context, table string) (io.ReadCloser, error)

// tableRows says where the tables' rows come from at scale factor sf: at
// small scales the files one generator process wrote for every table, else
// a generator process per table. The files are open and their directory
// already removed when it returns, so that a dbrig killed while loading
// leaves none of them behind; release closes those not read.
func tableRows(ctx context.Context, program string, sf float64) (rows tableSource, release func(), err error) {
	if sf > oneGeneratorMaxScale {
		return func(ctx context.Context, table string) (io.ReadCloser, error) {
			return generate(ctx, program, sf, table)
		}, func() {}, nil
	}
	files, err := generateFiles(ctx, program, sf)
	if err != nil {
		return nil, nil, err
	}
	var mu sync.Mutex
	rows = func(_ context.Context, table string) (io.ReadCloser, error) {
		mu.Lock()
		defer mu.Unlock()
		f, ok := files[table]
		if !ok {
			return nil, fmt.Errorf("%s: table %s was read already", GeneratorProgram, table)
		}
		delete(files, table)
		return &tableStream{file: f, table: table, r: bufio.NewReaderSize(f, 1<<16)}, nil
	}
	release = func() {
		mu.Lock()
		defer mu.Unlock()
		closeAll(files)
	}
	return rows, release, nil
}

// generateFiles runs the generator once for every table, each written to
// a file of a temporary directory (the same bytes it streams for one
// table), and returns the files open, the directory removed.
func generateFiles(ctx context.Context, program string, sf float64) (map[string]*os.File, error) {
	removeStaleGeneratorDirs(os.TempDir())
	dir, err := os.MkdirTemp("", generatorDirPrefix)
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	if err := engine.WriteOwner(dir); err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, program, "tbl", "--scale-factor", FormatScale(sf), "--output-dir", dir, "--quiet", "--num-threads", "1")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("%s at scale factor %s: %w: %s", GeneratorProgram, FormatScale(sf), err, strings.TrimSpace(tail(out.String(), 400)))
	}
	files := map[string]*os.File{}
	for _, table := range Tables {
		f, err := os.Open(filepath.Join(dir, table+".tbl"))
		if err != nil {
			closeAll(files)
			return nil, fmt.Errorf("%s wrote no table %s: %w", GeneratorProgram, table, err)
		}
		files[table] = f
	}
	return files, nil
}

// generatorDirPrefix names the generator's temporary directories.
const generatorDirPrefix = "dbrig-tpch-"

// removeStaleGeneratorDirs removes the generator directories of dbrigs
// that were killed while the generator wrote (their deferred removal never
// ran): each records its owner, as an instance directory does.
func removeStaleGeneratorDirs(base string) (removed []string) {
	return engine.RemoveGone(base, generatorDirPrefix+"*")
}

func closeAll(files map[string]*os.File) {
	for table, f := range files {
		f.Close()
		delete(files, table)
	}
}

// tableStream is a generator's output (its process's or a file it wrote)
// with each line's trailing '|' cut.
type tableStream struct {
	file   *os.File // nil when cmd is the source
	cmd    *exec.Cmd
	cancel context.CancelFunc
	stderr *bytes.Buffer
	table  string
	r      *bufio.Reader
	line   []byte // the rest of the current line, not yet read
	err    error
	closed bool
}

func (s *tableStream) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		if len(s.line) == 0 {
			if s.err != nil {
				break
			}
			line, err := s.r.ReadSlice('\n')
			if errors.Is(err, bufio.ErrBufferFull) {
				return n, fmt.Errorf("%s: a line of table %s is longer than %d bytes", GeneratorProgram, s.table, s.r.Size())
			}
			if err != nil {
				s.err = s.finish(err)
			}
			if k := len(line); k >= 2 && line[k-2] == '|' && line[k-1] == '\n' {
				line = append(line[:k-2], '\n')
			}
			s.line = line
			continue
		}
		c := copy(p[n:], s.line)
		s.line = s.line[c:]
		n += c
	}
	if n > 0 {
		return n, nil
	}
	return 0, s.err
}

// finish waits for the generator at the end of its output: io.EOF when it
// exited well, else its error and the last of its messages.
func (s *tableStream) finish(readErr error) error {
	if !errors.Is(readErr, io.EOF) {
		return readErr
	}
	s.closed = true
	if s.file != nil {
		if err := s.file.Close(); err != nil {
			return err
		}
		return io.EOF
	}
	if err := s.cmd.Wait(); err != nil {
		return fmt.Errorf("%s for table %s: %w: %s", GeneratorProgram, s.table, err, strings.TrimSpace(tail(s.stderr.String(), 400)))
	}
	s.cancel()
	return io.EOF
}

// Close stops the generator if it is still running, or closes its file.
func (s *tableStream) Close() error {
	if s.closed {
		return nil
	}
	s.closed = true
	if s.file != nil {
		return s.file.Close()
	}
	s.cancel()
	_ = s.cmd.Wait()
	return nil
}

func tail(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}
