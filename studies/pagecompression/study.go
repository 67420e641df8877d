package pagecompression

import (
	_ "embed"

	"github.com/dbrig/dbrig/internal/study"
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
		Judges:   Judges(),
		Report:   Report,
	}
}
