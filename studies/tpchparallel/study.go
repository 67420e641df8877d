package tpchparallel

import (
	_ "embed"

	"github.com/dbrig/dbrig/internal/study"
)

//go:embed tpch-parallel.toml
var file []byte

// Study is the study as main registers it.
func Study() study.Builtin {
	return study.Builtin{
		Name:     "tpch-parallel",
		File:     file,
		Path:     "studies/tpchparallel/tpch-parallel.toml",
		Workload: "tpch",
		Judges:   Judges(),
		Report:   Report,
	}
}
