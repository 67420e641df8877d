package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/dbrig/dbrig/internal/doctor"
	"github.com/dbrig/dbrig/internal/term"
)

func newDoctorCmd(a *app) *cobra.Command {
	var f doctorFlags
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "Check this host, or a fleet over ssh, for the faults the studies found",
		Long: `doctor checks disks (partition alignment), network interfaces (duplex, speed,
MTU), TCP buffers against the bandwidth-delay product of the links you declare,
CPU, clock and virtualization, and with --db a PostgreSQL server's settings.
Every check says what it observed, what it expected, why it matters (with the
study it comes from) and how to fix it. See docs/doctor.md.

With --hosts FILE (one [user@]host[:port] per line, '#' comments) it runs the
same checks on each host over ssh: your ssh config, keys, agent and known_hosts
apply; it never asks for a password (BatchMode=yes). It ships a small POSIX
shell script that prints the files the checks read (see --print-collector),
not a binary. An unreachable host is a failed row.

Exit codes: 0 no check failed (warnings allowed), 1 a check failed or a host
or the database was unreachable, 2 bad usage (flags, hosts file, --link).`,
		Example: `  dbrig doctor
  dbrig doctor --link tukwila-dublin --link 20ms:10gbit
  dbrig doctor --db postgres://postgres@localhost/postgres
  dbrig doctor --db env:MY_PG
  dbrig doctor --hosts fleet.txt --parallel 16 --timeout 30s --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if f.printScript {
				_, err := io.WriteString(a.stdout, doctor.CollectorScript)
				return err
			}
			return runDoctor(cmd.Context(), a, f)
		},
	}
	f.register(cmd)
	return cmd
}

type doctorFlags struct {
	hostsFile   string
	links       []string
	dbURI       string
	jsonOut     bool
	parallel    int
	timeout     time.Duration
	sshConfig   string
	sshOptions  []string
	snapshots   []string
	printScript bool
}

func (f *doctorFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&f.hostsFile, "hosts", "", "check the hosts listed in `FILE` over ssh, one [user@]host[:port] per line")
	fl.StringArrayVar(&f.links, "link", nil, "a link the database traffic crosses, to check TCP buffers against: `RTT:RATE` (150ms:1gbit, 77ms:10gigabit, \"20 ms:100 Mbps\"), PROFILE:RATE or PROFILE (tukwila-dublin); repeatable")
	fl.StringVar(&f.dbURI, "db", "", "check a PostgreSQL server's settings: `[db=]URI` or [db=]env:VAR (env:VAR, PGPASSWORD or ~/.pgpass keep the password out of the process list)")
	fl.BoolVar(&f.jsonOut, "json", false, "write the report as JSON (fields in docs/doctor.md)")
	fl.IntVar(&f.parallel, "parallel", 8, "check `N` hosts at a time")
	f.timeout = 20 * time.Second
	fl.Var(durationFlag{&f.timeout}, "timeout", "time allowed per host, and for the database connection (a `duration` such as 20s or 1m)")
	fl.StringVar(&f.sshConfig, "ssh-config", "", "use this ssh config `FILE` instead of ~/.ssh/config (ssh -F)")
	fl.StringArrayVar(&f.sshOptions, "ssh-option", nil, "pass -o `KEY=VALUE` to ssh (e.g. IdentityFile=~/.ssh/fleet, UserKnownHostsFile=...); repeatable")
	fl.StringArrayVar(&f.snapshots, "snapshot", nil, "check a snapshot `FILE` saved from the collector (dbrig doctor --print-collector | ssh HOST sh -s > FILE) instead of a live host; repeatable")
	fl.BoolVar(&f.printScript, "print-collector", false, "print the shell script that --hosts runs on each host, and exit")
}

// runDoctor checks the hosts and writes the report; every bad flag is
// reported at once, before any host is checked.
func runDoctor(ctx context.Context, a *app, f doctorFlags) error {
	opts, errs := f.options(a.getenv)
	hosts, hostErrs := f.hosts()
	if errs = append(errs, hostErrs...); len(errs) > 0 {
		return usageError(errors.Join(errs...))
	}
	if f.hostsFile == "" && len(f.snapshots) == 0 {
		hosts = append(hosts, doctor.LocalHost("/"))
	}

	rep := doctor.Run(ctx, hosts, opts)
	if err := ctx.Err(); err != nil {
		return err // interrupted: the report would be partial
	}
	var err error
	if f.jsonOut {
		err = doctor.WriteJSON(a.stdout, rep)
	} else {
		err = doctor.WriteText(a.stdout, rep, term.Style{Enabled: term.ColorEnabled(a.stdout, a.getenv)})
	}
	if err != nil {
		return err
	}
	if rep.ExitCode != 0 {
		return failure(fmt.Errorf("doctor: %s", failedWords(rep)))
	}
	return nil
}

// options reads the links, the limits, the ssh flags and --db.
func (f doctorFlags) options(getenv func(string) string) (doctor.Options, []error) {
	opts := doctor.Options{Parallel: f.parallel, Timeout: f.timeout}
	var errs []error
	for _, s := range f.links {
		l, err := doctor.ParseLink(s)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		opts.Links = append(opts.Links, l)
	}
	if f.parallel < 1 {
		errs = append(errs, fmt.Errorf("--parallel %d: want at least 1", f.parallel))
	}
	if f.timeout <= 0 {
		errs = append(errs, errors.New("--timeout 0: want a positive duration such as 20s"))
	}
	errs = append(errs, checkSSHFlags(f.hostsFile, f.sshConfig, f.sshOptions)...)
	if f.dbURI != "" {
		db, err := doctorDatabase(f.dbURI, getenv)
		if err != nil {
			errs = append(errs, err)
		}
		opts.DB = db
	}
	return opts, errs
}

// hosts are the hosts of --hosts, reached over ssh, and the snapshots.
func (f doctorFlags) hosts() ([]doctor.Host, []error) {
	var hosts []doctor.Host
	var errs []error
	if f.hostsFile != "" {
		targets, err := doctor.ReadHostsFile(f.hostsFile)
		if err != nil {
			errs = append(errs, fmt.Errorf("--hosts: %w", err))
		}
		ssh := doctor.SSH{ConfigFile: f.sshConfig, Options: f.sshOptions}
		for _, t := range targets {
			hosts = append(hosts, doctor.RemoteHost(t, ssh))
		}
	}
	for _, file := range f.snapshots {
		s, err := doctor.ReadSnapshotFile(file)
		if err != nil {
			errs = append(errs, fmt.Errorf("--snapshot: %w", err))
			continue
		}
		hosts = append(hosts, doctor.SnapshotHost(filepath.Base(file), s))
	}
	return hosts, errs
}

// doctorDatabase reads --db as every flag naming a server of the user's
// is read: a value that does not parse, or a server that is not
// PostgreSQL's, is refused before anything dials.
func doctorDatabase(value string, getenv func(string) string) (*doctor.Database, error) {
	arg, err := parseServerArg("db", "db", "postgres", value, newEngines(binDirs{}), getenv)
	if err != nil {
		return nil, err
	}
	return doctor.ParseDatabase(arg.uri)
}

// checkSSHFlags refuses ssh flags that ssh would reject on every host, or
// that nothing would use: each such mistake would otherwise show as every
// host unreachable (exit 1) instead of a usage error naming the flag.
func checkSSHFlags(hostsFile, sshConfig string, sshOptions []string) []error {
	var errs []error
	if hostsFile == "" {
		if sshConfig != "" {
			errs = append(errs, errors.New("--ssh-config is used only with --hosts FILE: give the hosts to check over ssh"))
		}
		if len(sshOptions) > 0 {
			errs = append(errs, errors.New("--ssh-option is used only with --hosts FILE: give the hosts to check over ssh"))
		}
	}
	if sshConfig != "" {
		if st, err := os.Stat(sshConfig); err != nil {
			errs = append(errs, fmt.Errorf("--ssh-config: %w", err))
		} else if st.IsDir() {
			errs = append(errs, fmt.Errorf("--ssh-config %s is a directory: want an ssh config file (ssh -F)", sshConfig))
		}
	}
	for _, o := range sshOptions {
		key, value, ok := strings.Cut(o, "=")
		if !ok {
			key, value, ok = strings.Cut(strings.TrimSpace(o), " ")
		}
		if !ok || strings.TrimSpace(key) == "" || strings.TrimSpace(value) == "" || strings.ContainsAny(key, " \t") {
			errs = append(errs, fmt.Errorf("--ssh-option %q: want KEY=VALUE, such as IdentityFile=~/.ssh/fleet (see man ssh_config)", o))
		}
	}
	return errs
}

// failedWords says what failed, for the one-line message on stderr.
func failedWords(rep *doctor.Report) string {
	checks, hosts, unreachable := 0, 0, 0
	for _, h := range rep.Hosts {
		if !h.Reachable {
			unreachable++
			continue
		}
		if h.Counts.Fail > 0 {
			hosts++
			checks += h.Counts.Fail
		}
	}
	msg := fmt.Sprintf("%d failed check(s) on %d host(s)", checks, hosts)
	if unreachable > 0 {
		msg += fmt.Sprintf(", %d host(s) unreachable", unreachable)
	}
	return msg
}
