package duplexmismatch

import (
	_ "embed"

	"github.com/dbrig/dbrig/internal/study"
)

//go:embed duplex-mismatch.toml
var file []byte

// Study is the study as main registers it.
func Study() study.Builtin {
	return study.Builtin{
		Name:     "duplex-mismatch",
		File:     file,
		Path:     "studies/duplexmismatch/duplex-mismatch.toml",
		Workload: "oltp",
		Judges:   Judges(),
	}
}
