// Package readahead is the read-ahead study: a cold scan with and without read-ahead (seed 002's engine notes).
package readahead

import (
	_ "embed"

	"github.com/dbrig/dbrig/internal/study"
	"github.com/dbrig/dbrig/internal/workload/readahead"
)

//go:embed read-ahead.toml
var file []byte

// Study is the study as main registers it.
func Study() study.Builtin {
	return study.Builtin{
		Name:     "read-ahead",
		File:     file,
		Path:     "studies/readahead/read-ahead.toml",
		Workload: "read-ahead",
		Judges:   readahead.Judges(),
		Report:   readahead.Report,
	}
}
