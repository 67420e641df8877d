// Package tpchparallel is the tpch-parallel study: parallel query scaling on the 22 TPC-H queries (seed 002).
package tpchparallel

import (
	_ "embed"

	"github.com/dbrig/dbrig/internal/study"
	"github.com/dbrig/dbrig/internal/workload/tpch"
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
		Judges:   tpch.Judges(),
		Report:   tpch.Report,
	}
}
