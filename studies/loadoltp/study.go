package loadoltp

import (
	"github.com/dbrig/dbrig/internal/study"
)

// Study registers the report sections of every run of the oltp workload:
// it has no file of its own, so `dbrig run` does not list it.
func Study() study.Builtin {
	return study.Builtin{Name: study.LoadName("oltp"), Workload: "oltp", Report: Report}
}
