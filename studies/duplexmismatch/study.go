// Package duplexmismatch is the duplex-mismatch study: a duplex mismatch under OLTP and under a reporting query (seed 002).
package duplexmismatch

import (
	_ "embed"

	"github.com/dbrig/dbrig/internal/study"
)

//go:embed duplex-mismatch.toml
var file []byte

// Its findings are judged, and its report drawn, by transport-oltp's
// package, which registers the oltp workload's judges and sections.

// Study is the study as main registers it.
func Study() study.Builtin {
	return study.Builtin{
		Name:     "duplex-mismatch",
		File:     file,
		Path:     "studies/duplexmismatch/duplex-mismatch.toml",
		Workload: "oltp",
	}
}
