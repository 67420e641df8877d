package main

import (
	"context"
	"errors"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/dbrig/dbrig/internal/engine/mariadb"
	"github.com/dbrig/dbrig/internal/engine/postgres"
)

// binFlags are the flags that name a directory of an engine's server
// programs, each with how to find the programs there.
var binFlags = []struct {
	name string
	find func(ctx context.Context, dir string) error
}{
	{"pg-bin", func(ctx context.Context, dir string) error { _, err := postgres.FindBinaries(ctx, dir); return err }},
	{"mariadb-bin", func(ctx context.Context, dir string) error { _, err := mariadb.FindBinaries(ctx, dir); return err }},
}

// checkBinFlags refuses, before anything starts and with exit 2, a
// --pg-bin or --mariadb-bin that names no directory of the engine's
// server programs, for every command that takes one: the engine would
// look there only once it first needed them, and fail the run (exit 1).
func checkBinFlags(cmd *cobra.Command, _ []string) error {
	var errs []error
	for _, b := range binFlags {
		fl := cmd.Flags().Lookup(b.name)
		if fl == nil || !fl.Changed {
			continue
		}
		if err := b.find(cmd.Context(), fl.Value.String()); err != nil {
			errs = append(errs, err)
		}
	}
	return usageError(errors.Join(errs...))
}

// register adds the flags that name where each engine's server programs
// are, the same on every command that starts servers (run, load, agent);
// where says on which host ("" for this one).
func (b *binDirs) register(fl *pflag.FlagSet, where string) {
	fl.StringVar(&b.pg, "pg-bin", "", "PostgreSQL server binaries `DIR`"+where+" (default: newest found)")
	fl.StringVar(&b.mariadb, "mariadb-bin", "", "MariaDB server binaries `DIR`"+where+" (default: found on PATH, /usr/sbin, /usr/bin)")
}
