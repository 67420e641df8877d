// Package rbarlatency is the rbar-latency study: row-by-row work across networks from a unix socket to a 77 ms WAN (seed 004).
package rbarlatency

import (
	_ "embed"

	"github.com/dbrig/dbrig/internal/study"
	"github.com/dbrig/dbrig/internal/workload/rbar"
)

//go:embed rbar-latency.toml
var file []byte

// Study is the study as main registers it.
func Study() study.Builtin {
	return study.Builtin{
		Name:     "rbar-latency",
		File:     file,
		Path:     "studies/rbarlatency/rbar-latency.toml",
		Workload: "rbar",
		Judges:   rbar.Judges(),
		Report:   rbar.Report,
	}
}
