package rbarlatency

import (
	_ "embed"

	"github.com/dbrig/dbrig/internal/study"
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
		Judges:   Judges(),
		Report:   Report,
	}
}
