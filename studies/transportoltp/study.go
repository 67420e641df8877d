package transportoltp

import (
	_ "embed"

	"github.com/dbrig/dbrig/internal/study"
)

//go:embed transport-oltp.toml
var file []byte

// Study is the study as main registers it.
func Study() study.Builtin {
	return study.Builtin{
		Name:     "transport-oltp",
		File:     file,
		Path:     "studies/transportoltp/transport-oltp.toml",
		Workload: "oltp",
		Judges:   Judges(),
	}
}
