package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// newLinkCmd is a placeholder until the link proxy lands; it is replaced by
// the real command in the same change.
func newLinkCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "link",
		Short: "Run the emulated network link as a standalone TCP proxy",
		RunE:  func(*cobra.Command, []string) error { return errors.New("not built yet") },
	}
}
