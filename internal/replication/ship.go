package replication

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/dbrig/dbrig/internal/engine"
	"github.com/dbrig/dbrig/internal/engine/postgres"
)

// ShipProtocol names the form of a [ShipRequest]: a ship of another build
// refuses a request it might misread instead of dumping something else.
const ShipProtocol = "dbrig-ship/1"

// ShipRequest is what the publisher's half of a shipped backup reads, one
// JSON line on its standard input. Over ssh it travels inside the session's
// encrypted channel: the publisher's password is never on a command line,
// in the environment of ssh or in any output. It names no program and no
// pg_dump option: the ship builds the one dump it may run from the snapshot
// and the tables.
type ShipRequest struct {
	Protocol  string          `json:"protocol"`
	Publisher postgres.Sealed `json:"publisher"`
	Snapshot  string          `json:"snapshot"`
	Tables    []TableName     `json:"tables"`
}

// snapshotName is the form of an exported snapshot's name
// (pg_export_snapshot: hex words and a number joined by '-').
var snapshotName = regexp.MustCompile(`^[0-9A-Fa-f]+(-[0-9A-Fa-f]+)+$`)

func (r ShipRequest) validate() error {
	switch {
	case r.Protocol != ShipProtocol:
		return fmt.Errorf("the request's protocol is %q, this dbrig speaks %q: run the same dbrig build on both sites", r.Protocol, ShipProtocol)
	case !snapshotName.MatchString(r.Snapshot):
		return fmt.Errorf("snapshot %q: not an exported snapshot's name", r.Snapshot)
	case len(r.Tables) == 0:
		return errors.New("no table to dump")
	case r.Publisher.Host == "" || r.Publisher.Database == "":
		return errors.New("the publisher's login names no host or database")
	}
	return nil
}

// backupDumpArgs are pg_dump's arguments for the published tables in the
// slot's exported snapshot. The archive is not compressed by pg_dump: what
// carries it across a WAN compresses it, faster than pg_dump's zlib.
func backupDumpArgs(snapshot string, tables []TableName) []string {
	args := []string{"--format=custom", "--compress=0", "--no-owner", "--no-privileges", "--snapshot=" + snapshot}
	for _, t := range tables {
		args = append(args, "--table="+t.Quoted())
	}
	return args
}

// ServeShip is `dbrig replicate ship`, the publisher's half of a shipped
// backup at the publisher's site: it reads a [ShipRequest] from in, runs
// pg_dump there and writes its archive to out compressed with zstd. It stops
// pg_dump and returns when in ends (the subscriber's side went away). On a
// failure the stream is left unfinished, so the far end cannot take a
// partial archive for a whole one.
func ServeShip(ctx context.Context, in io.Reader, out io.Writer, bin postgres.Binaries) error {
	br := bufio.NewReader(io.LimitReader(in, 1<<20))
	line, err := br.ReadBytes('\n')
	if err != nil {
		return fmt.Errorf("read the request on standard input: %w", err)
	}
	var req ShipRequest
	if err := json.Unmarshal(line, &req); err != nil {
		return fmt.Errorf("read the request on standard input: %w", err)
	}
	if err := req.validate(); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() { // ends with in: the other side closes it when done or gone
		_, _ = io.Copy(io.Discard, in)
		cancel()
	}()
	if bin.Dir == "" {
		if bin, err = postgres.FindBinaries(ctx, ""); err != nil {
			return err
		}
	}
	pub := req.Publisher.Open()
	dump := toolCmd(ctx, bin.Path("pg_dump"), backupDumpArgs(req.Snapshot, req.Tables), pub)
	var dumpErr strings.Builder
	dump.Stderr = &dumpErr
	archive, err := dump.StdoutPipe()
	if err != nil {
		return err
	}
	// pg_dump dies with the ship (its parent-death signal), however the
	// ship ends.
	if err := engine.Start(dump); err != nil {
		return fmt.Errorf("start pg_dump: %w", err)
	}
	zw, err := zstd.NewWriter(out, zstd.WithEncoderLevel(zstd.SpeedDefault))
	if err != nil {
		dump.Process.Kill()
		dump.Wait()
		return err
	}
	_, cerr := io.Copy(zw, archive)
	if cerr != nil {
		cancel() // pg_dump may be blocked writing to us
	}
	werr := dump.Wait()
	switch {
	case ctx.Err() != nil && cerr == nil && werr != nil:
		return errors.New("stopped: the subscriber's side went away")
	case werr != nil:
		return fmt.Errorf("dump the published tables from %s: %w: %s", pub, werr, strings.TrimSpace(lastLines(dumpErr.String(), 5)))
	case cerr != nil:
		return fmt.Errorf("send the archive: %w", cerr)
	}
	return zw.Close()
}

// Shipper runs the publisher's half of an [InitBackup] at the publisher's
// site (`dbrig replicate ship`, over the user's ssh or as a child process)
// and reads its archive, which crosses the network compressed: the seed's
// fastest initialization shipped a compressed backup across the WAN.
type Shipper struct {
	// Where names the publisher's site in messages ("ssh://db1", "local").
	Where string
	// SSH says Command is ssh's, whose exit status 255 is its own failure.
	SSH bool
	// Command is the process that runs the ship, its standard input and
	// output being the request and the archive.
	Command func() *exec.Cmd
	// Carry, when set, moves the compressed stream once more (across an
	// emulated link, for experiments); nil reads it from the process.
	Carry Carrier
	// Progress, when set, is told the bytes so far every ProgressEvery and
	// once at the end.
	Progress      func(ShipProgress)
	ProgressEvery time.Duration
}

// ShipProgress is how much of the archive has arrived.
type ShipProgress struct {
	// Raw is the archive's bytes, Compressed what crossed for them.
	Raw, Compressed int64
	Elapsed         time.Duration
	Done            bool
}

// shipStopGrace is how long the ship may take to stop after its input
// closed before it is killed.
const shipStopGrace = 10 * time.Second

// open starts the ship and returns the archive as it arrives,
// decompressed. Closing it stops the ship, if still running, and waits
// for it.
func (s *Shipper) open(ctx context.Context, req ShipRequest) (*shipStream, error) {
	cmd := s.Command()
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	// A pipe of our own: StdoutPipe's is closed by Wait, maybe before the
	// archive's last bytes are read.
	out, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	cmd.Stdout = w
	st := &shipStream{s: s, cmd: cmd, stdin: stdin, out: out, compressed: &countingReader{r: out}, tail: &tailBuffer{}, start: time.Now(), exited: make(chan struct{})}
	cmd.Stderr = st.tail
	err = engine.Start(cmd)
	w.Close()
	if err != nil {
		out.Close()
		return nil, fmt.Errorf("start the ship at %s: %w", s.Where, err)
	}
	go func() { // owned by st: Close waits for it
		st.waitErr = cmd.Wait()
		st.ran = time.Since(st.start)
		close(st.exited)
	}()
	st.stop = context.AfterFunc(ctx, st.halt)
	line, _ := json.Marshal(req)
	if _, err := stdin.Write(append(line, '\n')); err != nil {
		st.Close()
		return nil, st.failure(fmt.Errorf("send the request: %w", err))
	}
	var compressed io.Reader = st.compressed
	if s.Carry != nil {
		if st.carried, err = s.Carry(ctx, compressed); err != nil {
			st.Close()
			return nil, fmt.Errorf("carry the archive from %s: %w", s.Where, err)
		}
		compressed = st.carried
	}
	// A small window bounds what a stream can make this side allocate.
	if st.dec, err = zstd.NewReader(compressed, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxWindow(64<<20)); err != nil {
		st.Close()
		return nil, err
	}
	st.stopProgress = tellEvery(s.ProgressEvery, func() ShipProgress { return st.sofar(false) },
		func(p ShipProgress) int64 { return p.Raw }, s.Progress)
	return st, nil
}

// shipStream is the archive a ship sends, as the subscriber's site reads it.
type shipStream struct {
	s            *Shipper
	cmd          *exec.Cmd
	stdin        io.WriteCloser
	out          *os.File
	compressed   *countingReader
	carried      io.ReadCloser
	dec          *zstd.Decoder
	raw          atomic.Int64
	tail         *tailBuffer
	start        time.Time
	ran          time.Duration
	halting      atomic.Bool
	failed       error
	stop         func() bool
	exited       chan struct{}
	waitErr      error
	stopProgress func() // nil until the archive flows
	closeOnce    sync.Once
}

func (st *shipStream) Read(p []byte) (int, error) {
	n, err := st.dec.Read(p)
	st.raw.Add(int64(n))
	if err == nil {
		return n, nil
	}
	// The end of the stream, whole or cut: the ship says how it ended.
	<-st.exited
	if st.waitErr != nil && !st.halting.Load() {
		st.failed = st.failure(st.waitErr)
		return n, st.failed
	}
	return n, err
}

// cause is the ship's own failure, when it failed before being stopped.
func (st *shipStream) cause() error {
	<-st.exited
	if st.waitErr == nil || st.halting.Load() && st.failed == nil {
		return nil
	}
	if st.failed == nil {
		st.failed = st.failure(st.waitErr)
	}
	return st.failed
}

func (st *shipStream) rawBytes() int64 { return st.raw.Load() }

func (st *shipStream) took() time.Duration { return st.ran }

// failure says why the ship failed, in its own last words.
func (st *shipStream) failure(err error) error {
	select {
	case <-st.exited:
		err = st.waitErr
	case <-time.After(shipStopGrace):
	}
	words := strings.TrimSpace(lastLines(st.tail.String(), 5))
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee) && ee.ExitCode() == 255 && st.s.SSH:
		return fmt.Errorf("ship from %s: ssh failed: %s", st.s.Where, orElse(words, err.Error()))
	case errors.As(err, &ee) && ee.ExitCode() == 127:
		return fmt.Errorf("ship from %s: dbrig was not found there (install it, or name it with --ship-bin): %s", st.s.Where, orElse(words, err.Error()))
	case words != "":
		return fmt.Errorf("ship from %s: %s", st.s.Where, words)
	}
	return fmt.Errorf("ship from %s: %w", st.s.Where, err)
}

func orElse(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// halt asks the ship to stop (its input ends) and kills it if it has not
// within shipStopGrace.
func (st *shipStream) halt() {
	select {
	case <-st.exited:
	default:
		st.halting.Store(true)
	}
	st.stdin.Close()
	st.out.Close()
	select {
	case <-st.exited:
	case <-time.After(shipStopGrace):
		_ = st.cmd.Process.Kill()
	}
}

// Close stops the ship if it still runs and waits for it; the error is
// the ship's when it failed.
func (st *shipStream) Close() error {
	st.closeOnce.Do(func() {
		if st.stop != nil {
			st.stop()
		}
		if st.dec != nil {
			st.dec.Close()
		}
		if st.carried != nil {
			st.carried.Close()
		}
		st.halt()
		<-st.exited
		if st.stopProgress != nil {
			st.stopProgress()
		}
		if p := st.s.Progress; p != nil {
			p(st.sofar(true))
		}
	})
	if st.halting.Load() {
		return nil // stopped by us, after the restore read what it needed or failed
	}
	return st.cause()
}

func (st *shipStream) sofar(done bool) ShipProgress {
	return ShipProgress{Raw: st.raw.Load(), Compressed: st.compressed.load(), Elapsed: time.Since(st.start), Done: done}
}

// tailBuffer keeps the last bytes a process wrote to its error output.
type tailBuffer struct {
	mu sync.Mutex
	b  []byte
}

const tailBytes = 4096

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > tailBytes {
		t.b = t.b[len(t.b)-tailBytes:]
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}
