// Package keylookup is the key-lookup study: a key lookup against a scan, even in memory (seed 002's engine notes).
package keylookup

import (
	_ "embed"

	"github.com/dbrig/dbrig/internal/study"
	"github.com/dbrig/dbrig/internal/workload/keylookup"
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
		Judges:   keylookup.Judges(),
		Report:   keylookup.Report,
	}
}
