package oltp

import (
	"strings"
	"testing"

	"github.com/dbrig/dbrig/internal/engine"
	"github.com/dbrig/dbrig/internal/engine/postgres"
	"github.com/dbrig/dbrig/internal/study"
	"github.com/dbrig/dbrig/internal/workload"
)

// TestAPauseInAnOpenLoopIsRefusedAtParse: an open loop's pace is its rate,
// so a think or keying time beside a rate is a mistake about which loop
// runs; a study file was run with the pause silently ignored, while
// dbrig load oltp refused the same values.
func TestAPauseInAnOpenLoopIsRefusedAtParse(t *testing.T) {
	t.Parallel()
	reg := study.NewRegistry(engine.NewRegistry(postgres.New("")), []workload.Kind{Kind()})
	const file = `name = "open"
title = "An open loop that thinks"

[[instance]]
name = "db"

[workload]
kind = "oltp"
rate = 100.0
think = "1s"
keying = "10ms"
`
	_, err := study.Parse("open.toml", []byte(file), reg)
	for _, want := range []string{"open.toml:10: workload.think: think = 1s: think and keying are closed-loop settings", "open.toml:11: workload.keying: keying = 10ms"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Parse = %v\nwant %q", err, want)
		}
	}
	if _, err := study.Parse("open.toml", []byte(strings.Replace(file, "rate = 100.0", "rate = 0.0", 1)), reg); err != nil {
		t.Errorf("a closed loop that thinks: %v", err)
	}
}
