// Package transportoltp is the transport-oltp study: network transports under an e-commerce OLTP load (seed 001).
package transportoltp

import (
	_ "embed"

	"github.com/dbrig/dbrig/internal/study"
	"github.com/dbrig/dbrig/internal/workload/oltp"
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
		Judges:   oltp.Judges(),
		Report:   oltp.Report,
	}
}
