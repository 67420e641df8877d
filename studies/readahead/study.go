package readahead

import (
	_ "embed"

	"github.com/dbrig/dbrig/internal/study"
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
		Judges:   Judges(),
		Report:   Report,
	}
}
