// Package consolidation is the consolidation study: server consolidation: many small databases per instance (seed 003).
package consolidation

import (
	_ "embed"

	"github.com/dbrig/dbrig/internal/study"
	"github.com/dbrig/dbrig/internal/workload/tenants"
)

//go:embed consolidation.toml
var file []byte

// Study is the study as main registers it.
func Study() study.Builtin {
	return study.Builtin{
		Name:     "consolidation",
		File:     file,
		Path:     "studies/consolidation/consolidation.toml",
		Workload: "tenants",
		Judges:   tenants.Judges(),
		Report:   tenants.Report,
	}
}
