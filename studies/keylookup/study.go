package keylookup

import (
	_ "embed"

	"github.com/dbrig/dbrig/internal/study"
)

//go:embed key-lookup.toml
var file []byte

// Study is the study as main registers it.
func Study() study.Builtin {
	return study.Builtin{
		Name:     "key-lookup",
		File:     file,
		Path:     "studies/keylookup/key-lookup.toml",
		Workload: "key-lookup",
		Judges:   Judges(),
		Report:   Report,
	}
}
