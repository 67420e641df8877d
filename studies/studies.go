// Package studies lists the built-in studies, each a package of its own
// beside its study file: what it judges and draws beyond the file. main
// registers them with the workloads, so `dbrig run NAME` works from the
// binary alone.
package studies

import (
	"github.com/dbrig/dbrig/internal/study"
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
