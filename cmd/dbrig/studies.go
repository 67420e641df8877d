package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
)

// newStudiesShowCmd prints a built-in study's file as the binary holds it,
// so a user can copy it and change what a target or a machine cannot take
// (a sweep of a server setting, a placement): the refusals point here.
func newStudiesShowCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "show NAME",
		Short: "Print a built-in study's file (TOML), to copy and edit",
		Long: `Print the study file of the built-in study NAME on stdout, exactly as dbrig
runs it. Save it, edit the copy and run the copy:

  dbrig studies show rbar-latency > my-study.toml
  dbrig run my-study.toml

Exit codes: 0 printed, 2 no built-in study NAME (the message lists them).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			reg := newRegistry(binDirs{})
			b, ok := reg.Builtin(args[0])
			if !ok {
				return usageError(fmt.Errorf("studies show %s: no built-in study of that name (built-in: %s)", args[0], strings.Join(reg.Studies(), ", ")))
			}
			_, err := a.stdout.Write(b.File)
			return err
		},
	}
}
