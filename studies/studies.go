// Package studies lists the workload kinds and the built-in studies, each
// study a package of its own beside its study file: what it judges and
// draws beyond the file. main registers them, so `dbrig run NAME` works
// from the binary alone.
package studies

import (
	"github.com/dbrig/dbrig/internal/study"
	"github.com/dbrig/dbrig/internal/workload"
	"github.com/dbrig/dbrig/internal/workload/georep"
	keylookupkind "github.com/dbrig/dbrig/internal/workload/keylookup"
	"github.com/dbrig/dbrig/internal/workload/oltp"
	"github.com/dbrig/dbrig/internal/workload/pagecompress"
	"github.com/dbrig/dbrig/internal/workload/rbar"
	readaheadkind "github.com/dbrig/dbrig/internal/workload/readahead"
	"github.com/dbrig/dbrig/internal/workload/script"
	"github.com/dbrig/dbrig/internal/workload/tenants"
	"github.com/dbrig/dbrig/internal/workload/tpch"
	"github.com/dbrig/dbrig/studies/consolidation"
	"github.com/dbrig/dbrig/studies/duplexmismatch"
	"github.com/dbrig/dbrig/studies/georeplication"
	"github.com/dbrig/dbrig/studies/keylookup"
	"github.com/dbrig/dbrig/studies/loadoltp"
	"github.com/dbrig/dbrig/studies/pagecompression"
	"github.com/dbrig/dbrig/studies/rbarlatency"
	"github.com/dbrig/dbrig/studies/readahead"
	"github.com/dbrig/dbrig/studies/tpchparallel"
	"github.com/dbrig/dbrig/studies/transportoltp"
)

// Workloads are the workload kinds dbrig knows, one line each: a new
// workload package is registered here, for `dbrig run`, `dbrig load` and
// the tools that read every kind's runs.
func Workloads() []workload.Kind {
	return []workload.Kind{rbar.Kind(), georep.Kind(), tpch.Kind(), keylookupkind.Kind(), readaheadkind.Kind(), pagecompress.Kind(), oltp.Kind(), tenants.Kind(), script.Kind()}
}

// All are the built-in studies, one line each.
func All() []study.Builtin {
	return []study.Builtin{
		rbarlatency.Study(),
		georeplication.Study(),
		tpchparallel.Study(),
		keylookup.Study(),
		readahead.Study(),
		pagecompression.Study(),
		consolidation.Study(),
		loadoltp.Study(),
		transportoltp.Study(),
		duplexmismatch.Study(),
	}
}
