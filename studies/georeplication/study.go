// Package georeplication is the geo-replication study: transactional replication across a WAN: push, pull and the TCP window (seed 000).
package georeplication

import (
	_ "embed"

	"github.com/dbrig/dbrig/internal/study"
	"github.com/dbrig/dbrig/internal/workload/georep"
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
		Judges:   georep.Judges(),
		Report:   georep.Report,
	}
}
