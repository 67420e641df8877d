// Command dbrig is a test rig for database performance: it starts real
// database servers, puts an emulated network link between them and their
// clients, runs a study's workload, and reports every figure beside the
// figure a physical model predicts and the figure the source published.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

// Exit codes, documented in README.md.
const (
	exitOK      = 0 // success; every check passed
	exitFailure = 1 // a run, point or check failed
	exitUsage   = 2 // bad flags, arguments or study file: nothing was started
)

// exitError carries an exit code through cobra's error return.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// usageError marks err as the user's mistake (exit code 2).
func usageError(err error) error {
	if err == nil {
		return nil
	}
	return &exitError{code: exitUsage, err: err}
}

// failure marks err as a failed run or check (exit code 1) whose message
// has already been printed, so main prints nothing more when msg is empty.
func failure(err error) error {
	if err == nil {
		return nil
	}
	return &exitError{code: exitFailure, err: err}
}

// app holds what every command needs from the outside world, so commands
// are testable with injected streams and environment.
type app struct {
	stdout, stderr io.Writer
	getenv         func(string) string
	version        string
	// args is the command line and secrets the passwords in it and in the
	// environment it names, for what records the command line (run.json).
	args, secrets []string
}

func main() {
	in, stop := interruptContext(os.Stderr)
	code := run(in.ctx, os.Args[1:], &app{stdout: in.guardOutput(os.Stdout), stderr: in.stderr, getenv: os.Getenv, version: version})
	stop()
	os.Exit(in.exitCode(code))
}

// run executes one command line and returns the process exit code.
func run(ctx context.Context, args []string, a *app) int {
	copied := *a
	copied.args, copied.secrets = args, userSecrets(args, a.getenv)
	if len(copied.secrets) > 0 {
		// Every message, log line and result printed from here on passes
		// through this filter: a password the user gave, in whatever form,
		// does not come back out.
		copied.stdout = &redactingWriter{w: a.stdout, secrets: copied.secrets}
		copied.stderr = &redactingWriter{w: a.stderr, secrets: copied.secrets}
	}
	a = &copied
	root := newRootCmd(a)
	root.SetArgs(args)
	root.SetOut(a.stdout)
	root.SetErr(a.stderr)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return exitOK
	}
	var ee *exitError
	code := exitFailure
	if errors.As(err, &ee) {
		code = ee.code
	} else if isCobraUsageError(err) {
		code = exitUsage
	}
	if errors.Is(err, context.Canceled) && ctx.Err() != nil {
		// Interrupted by SIGINT, SIGTERM or SIGHUP: the command has said
		// what it saved; the code is the shell's for SIGINT, for all three,
		// so a script tells "interrupted, resumable" by one code.
		return 130
	}
	if msg := err.Error(); msg != "" {
		fmt.Fprintln(a.stderr, "dbrig:", msg)
	}
	return code
}

func newRootCmd(a *app) *cobra.Command {
	root := &cobra.Command{
		Use:   "dbrig",
		Short: "A test rig for database performance on real servers and emulated networks",
		Long: `dbrig starts real PostgreSQL and MariaDB servers (or attaches to yours with
--target), puts an emulated network link (delay, bandwidth, TCP window, loss,
duplex) between them and their clients, runs a study's workload, and reports
every figure beside the figure a physical model predicts and the figure the
source study published.

Exit codes: 0 success, 1 a run or check failed, 2 bad usage or study file,
130 interrupted, 141 stopped because the reader of its output quit.`,
		Version:           a.version,
		SilenceUsage:      true,
		SilenceErrors:     true,
		PersistentPreRunE: checkBinFlags,
	}
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return usageError(fmt.Errorf("%w (see '%s --help')", err, c.CommandPath()))
	})
	// The registry of commands: explicit, sorted by cobra for --help.
	for _, newCmd := range []func(*app) *cobra.Command{
		newAgentCmd,
		newCompareCmd,
		newDiagnoseCmd,
		newDoctorCmd,
		newK8sCmd,
		newLinkCmd,
		newLoadCmd,
		newReplicateCmd,
		newRunCmd,
		newReportCmd,
		newStudiesCmd,
		newClientCmd,
	} {
		root.AddCommand(newCmd(a))
	}
	return root
}

// isCobraUsageError recognises cobra's own argument errors (unknown command,
// wrong number of arguments), which it returns as plain errors.
func isCobraUsageError(err error) bool {
	msg := err.Error()
	for _, p := range []string{"unknown command", "accepts ", "requires at least", "requires at most", "unknown flag", "unknown shorthand", "invalid argument"} {
		if strings.Contains(msg, p) {
			return true
		}
	}
	return false
}
