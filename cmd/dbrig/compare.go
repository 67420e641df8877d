package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/dbrig/dbrig/internal/report"
	"github.com/dbrig/dbrig/internal/study"
)

func newCompareCmd(a *app) *cobra.Command {
	var asJSON bool
	var htmlPath string
	cmd := &cobra.Command{
		Use:   "compare RUN_A RUN_B",
		Short: "Set two runs of the same study side by side",
		Long: `compare reads two run directories of the same study (different engines,
targets, machines or dbrig versions) and sets each combination's headline
metrics side by side: the value each run kept, the ratio B / A, and whether
the difference is larger than the runs' own spread (their ranges do not
overlap). Combinations measured in one run only are listed.

Exit codes: 0 compared, 2 a directory is not a run, the runs are of
different studies, or --html names an existing file dbrig did not write.`,
		Example: `  dbrig compare runs/rbar-latency-20261122-101500 runs/rbar-latency-20261122-113000
  dbrig compare runs/pg runs/mariadb --html compare.html
  dbrig compare runs/a runs/b --json`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkHTMLOut(htmlPath); err != nil {
				return err
			}
			reg := newRegistry(binDirs{})
			var runs [2]*study.RunData
			for i, dir := range args {
				if _, err := os.Stat(filepath.Join(dir, study.RunFile)); err != nil {
					return usageError(fmt.Errorf("%s is not a dbrig run directory (no %s)", dir, study.RunFile))
				}
				rd, err := study.LoadRun(dir, reg)
				if err != nil {
					return usageError(err)
				}
				runs[i] = rd
			}
			c, err := study.Compare(runs[0], runs[1])
			if err != nil {
				return usageError(err)
			}
			if htmlPath != "" {
				f, err := os.Create(htmlPath)
				if err != nil {
					return failure(err)
				}
				if err := report.WriteHTML(f, c.Doc()); err != nil {
					f.Close()
					return failure(err)
				}
				if err := f.Close(); err != nil {
					return failure(err)
				}
			}
			if asJSON {
				enc := json.NewEncoder(a.stdout)
				enc.SetIndent("", "  ")
				return enc.Encode(c)
			}
			fmt.Fprint(a.stdout, c.Text())
			if htmlPath != "" {
				fmt.Fprintf(a.stdout, "report: %s\n", htmlPath)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the comparison as JSON")
	cmd.Flags().StringVar(&htmlPath, "html", "", "also write the comparison as an HTML report to `FILE`")
	return cmd
}

// checkHTMLOut refuses --html FILE when FILE exists and is not a page dbrig
// wrote (its generator tag), so a comparison never replaces a user's file.
func checkHTMLOut(path string) error {
	if path == "" {
		return nil
	}
	b, err := os.ReadFile(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil
	case err != nil:
		return usageError(fmt.Errorf("--html: %w", err))
	case !bytes.Contains(b, []byte(`<meta name="generator" content="dbrig">`)):
		return usageError(fmt.Errorf("--html: %s exists and is not a report dbrig wrote: name a new file", path))
	}
	return nil
}
