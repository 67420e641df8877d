package study

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// CheckOutDir says whether dir may receive a run: it does not exist yet, is
// empty, or is a run directory already (it holds run.json), which the run
// resumes under the resume rules. Any other directory is the user's:
// dbrig would write its spec, results and report.html over what is there.
func CheckOutDir(dir string) error {
	st, err := os.Stat(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil
	case err != nil:
		return err
	case !st.IsDir():
		return fmt.Errorf("%s is a file, not a directory", dir)
	}
	if _, err := os.Stat(filepath.Join(dir, RunFile)); err == nil {
		return nil
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	if len(entries) > 0 {
		return fmt.Errorf("%s is not empty and is not a dbrig run directory (it has no %s): dbrig would write its results and report.html among what is there; name a new or empty directory", dir, RunFile)
	}
	return nil
}
