package consolidation

import (
	_ "embed"

	"github.com/dbrig/dbrig/internal/study"
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
		Judges:   Judges(),
		Report:   Report,
	}
}
