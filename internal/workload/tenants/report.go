package tenants

import (
	"github.com/dbrig/dbrig/internal/report"
	"github.com/dbrig/dbrig/internal/study"
)

// Report is filled in later.
func Report(rd *study.RunData, d *report.Doc) {}
