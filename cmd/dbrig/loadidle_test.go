package main

import (
	"strings"
	"testing"
)

// --idle takes halt or spin, on every load command, refused before
// anything starts.
func TestLoadIdleUsage(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	for _, kind := range []string{"script", "oltp", "tpch"} {
		args := []string{"load", kind, "--idle", "poll"}
		code, stdout, stderr := runDbrig(t, base, nil, args...)
		if says := `--idle poll: want "halt"`; code != 2 || !strings.Contains(stderr, says) {
			t.Errorf("dbrig %s: exit %d, stderr %q; want 2 saying %q\n%s", strings.Join(args, " "), code, stderr, says, stdout)
		}
	}
}
