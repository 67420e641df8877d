package loadoltp

import (
	"github.com/dbrig/dbrig/internal/study"
	"github.com/dbrig/dbrig/internal/workload/oltp"
)

// Study registers the report sections of every run of the oltp workload:
// it has no file of its own, so `dbrig run` does not list it.
func Study() study.Builtin {
	return study.Builtin{Name: oltp.StandaloneStudy, Workload: "oltp", Report: Report}
}
