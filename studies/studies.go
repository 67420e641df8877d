// Package studies lists the built-in studies, each a package of its own
// beside its study file: what it judges and draws beyond the file. main
// registers them with the workloads, so `dbrig run NAME` works from the
// binary alone.
package studies

import (
	"github.com/dbrig/dbrig/internal/study"
	"github.com/dbrig/dbrig/studies/consolidation"
	"github.com/dbrig/dbrig/studies/duplex-mismatch"
	"github.com/dbrig/dbrig/studies/geo-replication"
	"github.com/dbrig/dbrig/studies/key-lookup"
	"github.com/dbrig/dbrig/studies/page-compression"
	"github.com/dbrig/dbrig/studies/rbar-latency"
	"github.com/dbrig/dbrig/studies/read-ahead"
	"github.com/dbrig/dbrig/studies/tpch-parallel"
	"github.com/dbrig/dbrig/studies/transport-oltp"
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
		transportoltp.Study(),
		duplexmismatch.Study(),
	}
}
