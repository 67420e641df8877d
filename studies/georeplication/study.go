package georeplication

import (
	_ "embed"

	"github.com/dbrig/dbrig/internal/study"
)

//go:embed geo-replication.toml
var file []byte

// Study is the study as main registers it.
func Study() study.Builtin {
	return study.Builtin{
		Name:     "geo-replication",
		File:     file,
		Path:     "studies/georeplication/geo-replication.toml",
		Workload: "georep",
		Judges:   Judges(),
		Report:   Report,
	}
}
