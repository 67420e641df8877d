package study

import (
	"strings"
	"sync/atomic"
	"testing"
)

// TestPointSaysWhenTheServerRunsAnotherValue: a server that takes a
// setting of the study's with another value (PostgreSQL rounds
// shared_buffers to whole 8 kB pages) qualifies the point measured on it;
// once the server runs the study's values again, the next point says
// nothing; a setting taken as written (fsync) never shows.
func TestPointSaysWhenTheServerRunsAnotherValue(t *testing.T) {
	t.Parallel()
	var prepares atomic.Int64
	out := probeRun(t, `name = "untaken"
title = "a setting the server rounds"
[[instance]]
name = "db"
settings = { shared_buffers = "${sb}", fsync = "off" }
[[link]]
between = ["client", "db"]
profile = "unix"
[workload]
kind = "probe"
[sweep]
sb = ["1001kB", "1MB"]
[repeat]
runs = 1
`, &prepares)
	if len(out.Results) != 2 {
		t.Fatalf("%d results, want 2", len(out.Results))
	}
	want := "db runs shared_buffers = 1000kB where the study set 1001kB"
	if w := out.Results[0].Warnings; len(w) != 1 || !strings.Contains(w[0], want) || strings.Contains(w[0], "fsync") {
		t.Errorf("the point at 1001kB warns %q, want one warning with %q", w, want)
	}
	if w := out.Results[1].Warnings; len(w) != 0 {
		t.Errorf("the point at 1MB, a value the server takes, warns %q", w)
	}
}
