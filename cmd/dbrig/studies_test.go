package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/dbrig/dbrig/studies"
)

// TestStudiesShow prints every built-in study's file byte for byte as the
// binary holds it, and refuses a name it lacks with the list.
func TestStudiesShow(t *testing.T) {
	t.Parallel()
	show := func(args ...string) (int, string, string) {
		var stdout, stderr bytes.Buffer
		code := run(t.Context(), append([]string{"studies", "show"}, args...), &app{stdout: &stdout, stderr: &stderr, getenv: func(string) string { return "" }, version: "test"})
		return code, stdout.String(), stderr.String()
	}
	for _, b := range studies.All() {
		if b.File == nil {
			continue
		}
		if code, out, errs := show(b.Name); code != 0 || out != string(b.File) {
			t.Errorf("studies show %s: exit %d, %d bytes, want %s's %d bytes:\n%s", b.Name, code, len(out), b.Path, len(b.File), errs)
		}
	}
	code, out, errs := show("nosuch")
	if code != exitUsage || out != "" || !strings.Contains(errs, "no built-in study of that name (built-in: consolidation,") {
		t.Errorf("studies show nosuch: exit %d, stdout %q, stderr %q; want 2 and the list", code, out, errs)
	}
}
