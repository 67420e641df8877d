// Package tpchtest finds the TPC-H data generator for tests. Locally a test
// is skipped, with the reason, when it is not installed; in CI (CI=true)
// that is a failure, never a skip.
package tpchtest

import (
	"context"
	"os"
	"testing"

	"github.com/dbrig/dbrig/internal/workload/tpch"
)

// Generator returns tpchgen-cli's path or skips (fails in CI).
func Generator(tb testing.TB) string {
	tb.Helper()
	p, err := tpch.FindGenerator(context.Background())
	if err != nil && os.Getenv("CI") == "" {
		tb.Skipf("skipped: %v", err)
	}
	if err != nil {
		tb.Fatal(err)
	}
	return p
}
