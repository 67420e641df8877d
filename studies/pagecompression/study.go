// Package pagecompression is the page-compression study: page-level compression follows the data's order (seed 002's engine notes).
package pagecompression

import (
	_ "embed"

	"github.com/dbrig/dbrig/internal/study"
	"github.com/dbrig/dbrig/internal/workload/pagecompress"
)

//go:embed page-compression.toml
var file []byte

// Study is the study as main registers it.
func Study() study.Builtin {
	return study.Builtin{
		Name:     "page-compression",
		File:     file,
		Path:     "studies/pagecompression/page-compression.toml",
		Workload: "page-compression",
		Judges:   pagecompress.Judges(),
		Report:   pagecompress.Report,
	}
}
