package study

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/dbrig/dbrig/internal/engine"
	"github.com/dbrig/dbrig/internal/workload"
)

// A constrained client (GOMAXPROCS, CPU affinity, a CPU cap) runs a point's
// workload in a child process, so that its limits bind the client alone and
// not the emulated links, which run in dbrig's own process.

// ClientEnvVar marks a process started as a study client.
const ClientEnvVar = "DBRIG_STUDY_CLIENT"

// clientJob is what the parent sends on the child's stdin. It carries
// passwords and travels only over that pipe.
type clientJob struct {
	Kind       string                    `json:"kind"`
	Params     workload.Params           `json:"params"`
	Database   string                    `json:"database"`
	Sets       map[string][]string       `json:"sets"`
	ClientSite string                    `json:"client_site"`
	CPUs       string                    `json:"cpus"`
	Endpoints  map[string]clientEndpoint `json:"endpoints"` // by instance name
	// Files are the texts of the files the study read for its parameters.
	Files map[string]string `json:"files,omitempty"`
}

type clientEndpoint struct {
	Conn      engine.Sealed `json:"conn"`
	Link      string        `json:"link"`
	Transport string        `json:"transport"`
}

// clientEvent is a line the child writes on its stdout.
type clientEvent struct {
	Done   *[2]int64             `json:"progress,omitempty"`
	Result *workload.Measurement `json:"result,omitempty"`
	Error  string                `json:"error,omitempty"`
}

// runInChild runs the workload's Run in a client process.
func runInChild(ctx context.Context, command []string, job clientJob, client workload.ResolvedClient, env *workload.Env) (workload.Measurement, error) {
	cmd := exec.CommandContext(ctx, command[0], command[1:]...)
	cmd.Env = append(os.Environ(), ClientEnvVar+"=1")
	if client.GOMAXPROCS > 0 {
		cmd.Env = append(cmd.Env, "GOMAXPROCS="+strconv.Itoa(client.GOMAXPROCS))
	}
	var proc engine.ProcessOptions
	if client.CPUSpeed > 0 {
		cg, err := engine.NewCgroup(clientCgroupName(), engine.Limits{CPU: client.CPUSpeed})
		if err != nil {
			return workload.Measurement{}, fmt.Errorf("client cpu_speed %g: %w", client.CPUSpeed, err)
		}
		// Removed once the child has exited: Wait returns before this runs.
		defer func() { _ = cg.Remove() }()
		proc.Cgroup = cg
	}
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 5 * time.Second
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return workload.Measurement{}, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return workload.Measurement{}, err
	}
	var stderr strings.Builder
	cmd.Stderr = &limitedWriter{w: &stderr, n: 64 << 10}
	if err := engine.StartWith(cmd, proc); err != nil { // dies with dbrig, even on SIGKILL
		return workload.Measurement{}, fmt.Errorf("start client process %s: %w", command[0], err)
	}
	go func() { // ends when the job is written or the child's stdin closes
		_ = json.NewEncoder(stdin).Encode(job)
		stdin.Close()
	}()
	var m *workload.Measurement
	var childErr string
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	for sc.Scan() {
		var ev clientEvent
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			continue
		}
		switch {
		case ev.Done != nil && env.Progress != nil:
			env.Progress(ev.Done[0], ev.Done[1])
		case ev.Result != nil:
			m = ev.Result
		case ev.Error != "":
			childErr = ev.Error
		}
	}
	waitErr := cmd.Wait()
	switch {
	case ctx.Err() != nil:
		return workload.Measurement{}, ctx.Err()
	case childErr != "":
		return workload.Measurement{}, errors.New(childErr)
	case waitErr != nil:
		return workload.Measurement{}, fmt.Errorf("client process: %v: %s", waitErr, lastLine(stderr.String()))
	case m == nil:
		return workload.Measurement{}, fmt.Errorf("client process ended without a result: %s", lastLine(stderr.String()))
	}
	return *m, nil
}

var clientCgroups atomic.Int64

// clientCgroupName names a client process's cgroup, unique among the
// dbrig runs that share the machine.
func clientCgroupName() string {
	return fmt.Sprintf("dbrig-client-%d-%d", os.Getpid(), clientCgroups.Add(1))
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}

type limitedWriter struct {
	w io.Writer
	n int
}

func (l *limitedWriter) Write(p []byte) (int, error) {
	if l.n > 0 {
		k := min(len(p), l.n)
		l.n -= k
		_, _ = l.w.Write(p[:k])
	}
	return len(p), nil
}

// ClientMain is the body of a client process: it reads one job on stdin,
// runs the workload and writes events on stdout. It returns the exit code.
func ClientMain(ctx context.Context, reg *Registry, stdin io.Reader, stdout, stderr io.Writer) int {
	enc := json.NewEncoder(stdout)
	fail := func(err error) int {
		_ = enc.Encode(clientEvent{Error: err.Error()})
		return 1
	}
	var job clientJob
	if err := json.NewDecoder(stdin).Decode(&job); err != nil {
		return fail(fmt.Errorf("client process: read job: %w", err))
	}
	if job.CPUs != "" {
		if err := pinProcess(job.CPUs); err != nil {
			return fail(err)
		}
	}
	kind, ok := reg.Lookup(job.Kind)
	if !ok {
		return fail(fmt.Errorf("client process: unknown workload %q", job.Kind))
	}
	w, err := kind.New(job.Params)
	if err != nil {
		return fail(err)
	}
	env := &workload.Env{
		Params:     job.Params,
		Database:   job.Database,
		Engines:    reg.Engines(),
		Set:        func(name string) []string { return job.Sets[name] },
		ClientSite: job.ClientSite,
		Log:        slog.New(slog.NewTextHandler(stderr, nil)),
		SiteOf:     func(string) string { return "" },
		ReadFile: func(name string) ([]byte, error) {
			if text, ok := job.Files[name]; ok {
				return []byte(text), nil
			}
			return nil, fmt.Errorf("%s: %w", name, errNotRead)
		},
		Conn: func(from, instance, db string) (workload.Endpoint, error) {
			e, ok := job.Endpoints[instance]
			if !ok || from != job.ClientSite {
				return workload.Endpoint{}, fmt.Errorf("client process reaches only the client site's endpoints, not %s->%s", from, instance)
			}
			c := e.Conn.Open()
			if db != job.Database {
				// The endpoints lead to the workload's database, which on
				// a target whose login may not create databases is a
				// schema in the login's own: only another database
				// changes the login's.
				c = c.WithDatabase(db)
				c.Schema = ""
			}
			return workload.Endpoint{Conn: c, Link: e.Link, Transport: e.Transport}, nil
		},
	}
	var last time.Time
	env.Progress = func(done, total int64) {
		if now := time.Now(); now.Sub(last) > 200*time.Millisecond || done == total {
			last = now
			_ = enc.Encode(clientEvent{Done: &[2]int64{done, total}})
		}
	}
	m, err := safeRun(ctx, w, env)
	if err != nil {
		return fail(err)
	}
	if err := enc.Encode(clientEvent{Result: &m}); err != nil {
		return 1
	}
	return 0
}

// pinProcess sets the CPU affinity of every thread of this process; threads
// made later inherit it.
func pinProcess(list string) error {
	cpus, err := engine.CheckCPUs(list)
	if err != nil {
		return fmt.Errorf("client: %w", err)
	}
	var set unix.CPUSet
	for _, c := range cpus {
		set.Set(c)
	}
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return fmt.Errorf("pin the client to CPUs %s: %w", list, err)
	}
	for _, t := range tasks {
		tid, _ := strconv.Atoi(t.Name())
		if err := unix.SchedSetaffinity(tid, &set); err != nil && !errors.Is(err, unix.ESRCH) {
			return fmt.Errorf("pin the client to CPUs %s: %w", list, err)
		}
	}
	return nil
}
